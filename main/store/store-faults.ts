import { statfsSync } from 'node:fs';
import { AppError } from '../core/errors.js';

/**
 * What an error from the store says about the store itself:
 * - `full`: nothing more can be written now (SQLITE_FULL, ENOSPC, EDQUOT, PostgreSQL's 53100 when the
 *   server's own disk is full): the same write works once space returns, so it is retried, never dropped;
 * - `damaged`: the file is not the database it was (SQLITE_CORRUPT, SQLITE_NOTADB, an I/O error, the file
 *   moved or deleted under the connection): nothing written from here on can be trusted, so a leader stops;
 * - null: anything else (a busy file, a rule of the engine).
 */
export type StoreFault = 'full' | 'damaged';

const FULL_ERRNO = new Set(['ENOSPC', 'EDQUOT']);
/** PostgreSQL's SQLSTATE disk_full: the server could not extend a file or write its WAL. */
const PG_DISK_FULL = '53100';

/** Below this much free space an I/O error is taken for a full disk (SQLite reports a full -shm as one). */
const NEARLY_FULL_BYTES = 1024 * 1024;

/**
 * `home`: the folder holding the store; an I/O error while its file system is (nearly) full is `full`, not
 * damage (creating the -wal or -shm file of a full disk fails as SQLITE_IOERR_*).
 */
export function storeFaultOf(err: unknown, home?: string): StoreFault | null {
  const fault = faultOf(err);
  if (fault === 'damaged' && home && String((err as { code?: unknown }).code).startsWith('SQLITE_IOERR')) {
    const free = freeBytes(home);
    if (free !== null && free < NEARLY_FULL_BYTES) return 'full';
  }
  return fault;
}

function faultOf(err: unknown): StoreFault | null {
  if (err instanceof AppError) {
    if (err.code === 'store_damaged') return 'damaged';
    if (err.code === 'disk_full' && err.details?.store === true) return 'full';
    return null;
  }
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  if (code === 'SQLITE_FULL' || code === PG_DISK_FULL || FULL_ERRNO.has(code)) return 'full';
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_READONLY_DBMOVED') return 'damaged';
  return null;
}

/** Bytes this user may still write on the file system holding `dir`, or null when it cannot be asked. */
export function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}

/** A size as people read it: 0 B, 812 KiB, 3.4 MiB, 12.0 GiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** The error a write that found the home's file system full is reported as: what is full, and where. */
export function storeFullError(dbPath: string, homeRoot: string, err: unknown): AppError {
  const why = err instanceof Error ? err.message : String(err);
  if ((err as { code?: unknown } | null)?.code === PG_DISK_FULL) {
    return new AppError('disk_full', `the PostgreSQL store cannot be written: the server's disk is full (${why})`, { store: true, server: true });
  }
  const free = freeBytes(homeRoot);
  return new AppError(
    'disk_full',
    `the store ${dbPath} cannot be written: the file system holding ${homeRoot} is full (${free === null ? 'free space unknown' : `${formatBytes(free)} free`}; ${why})`,
    { store: true, path: dbPath, home: homeRoot, freeBytes: free },
  );
}

/**
 * The error a damaged store is reported as, with what to do. `what` says what was found ("was deleted",
 * "failed its integrity check: …").
 */
export function storeDamagedError(dbPath: string, what: string, extra: { fix?: string; rescued?: string } = {}): AppError {
  const fix =
    extra.fix ??
    (extra.rescued
      ? `what this process still held is saved in ${extra.rescued}: stop every LightWorker process of this home, then \`rm -f ${dbPath}-wal ${dbPath}-shm && mv ${extra.rescued} ${dbPath}\` (the old -wal and -shm belong to the lost file), or restore a backup; \`lightworker init --new-store\` starts an empty store instead`
      : `stop every LightWorker process of this home, then restore ${dbPath} from a backup; \`lightworker init --new-store\` sets the damaged file aside and starts an empty store`);
  return new AppError('store_damaged', `the store ${dbPath} ${what}; fix: ${fix}`, { closed: true, path: dbPath, fix, ...(extra.rescued ? { rescued: extra.rescued } : {}) });
}
