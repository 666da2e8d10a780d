import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import { connectSqlite, type Db } from './db.js';
import { storeFaultOf } from './store-faults.js';
import { touchPrivate } from '../core/private-home.js';

// Noticing a store that is no longer the database it was, while a process holds it open. SQLite itself
// does not: a connection keeps writing into a deleted file (its inode lives on while open), into a
// truncated one and past corrupted pages it has cached; other processes then see an empty or malformed
// database. The checks here are what a leader runs at its beats (cheap) and every so often (quick_check).


/** The file a connection opened: device and inode, taken right after the open. */
export interface StoreFileId {
  dev: number;
  ino: number;
}

export function storeFileId(path: string): StoreFileId | null {
  try {
    const s = statSync(path);
    return { dev: s.dev, ino: s.ino };
  } catch {
    return null;
  }
}

const MAGIC = 'SQLite format 3\0';

/**
 * The cheap look (a stat and the 100-byte header; microseconds): null while the file at `path` is still
 * the one opened and no shorter than its header says, else what is wrong with it. A file shorter than its
 * header's page count can be seen for a moment while a checkpoint grows it: callers act on a second sighting.
 */
export function lookAtStoreFile(path: string, opened: StoreFileId): string | null {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'was deleted (or moved away) while this process had it open';
    return `cannot be looked at: ${(err as Error).message}`;
  }
  if (st.dev !== opened.dev || st.ino !== opened.ino) return 'was replaced by another file while this process had it open';
  if (st.size === 0) return 'was emptied (truncated to 0 bytes) while this process had it open';
  const header = Buffer.alloc(100);
  let n = 0;
  try {
    const fd = openSync(path, 'r');
    try {
      n = readSync(fd, header, 0, 100, 0);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    return `cannot be read: ${(err as Error).message}`;
  }
  if (n < 100 || header.toString('latin1', 0, 16) !== MAGIC) return 'no longer starts with an SQLite header (overwritten or truncated)';
  const pageSize = header.readUInt16BE(16) === 1 ? 65536 : header.readUInt16BE(16);
  const pages = header.readUInt32BE(28);
  // The header's page count is valid when its change counter matches "version-valid-for" (always, for
  // SQLite ≥ 3.7.0 writers).
  const valid = header.readUInt32BE(24) === header.readUInt32BE(92);
  if (valid && pages > 0 && st.size < pages * pageSize) return `was truncated: ${st.size} bytes, its header says ${pages} pages of ${pageSize} bytes`;
  return null;
}

/**
 * The cheap look, with a short file confirmed before it counts. A checkpoint copies page 1 (which carries
 * the new page count) before the pages past the file's old end, so on a busy home (a hundred processes
 * committing, a slow disk) a healthy file looks "truncated" for as long as a checkpoint takes, over several
 * looks. The pages missing from such a file are still in the WAL: a fresh connection's quick_check reads
 * them there and passes; a file that really lost its tail fails it.
 */
export function lookAtStoreFileConfirmed(path: string, opened: StoreFileId, nativeBinding?: string, home?: string): string | null {
  const problem = lookAtStoreFile(path, opened);
  if (!problem?.startsWith('was truncated')) return problem;
  const check = quickCheckFile(path, nativeBinding, home);
  return check.ok ? null : `${problem} (${check.problem})`;
}

export interface QuickCheck {
  ok: boolean;
  /** quick_check's first lines when not ok, or the error that kept it from running. */
  problem: string | null;
  durationMs: number;
}

/**
 * `PRAGMA quick_check` on a connection of its own, opened for this check: the caller's connection may
 * hold pages in its cache that the file no longer has. About 0.6 ms per MB of database in the page cache
 * (2.4 ms for 1 MB, 9 ms for 10 MB, 62 ms for 100 MB of event rows on a 2-core machine: a fresh read-only
 * connection timed around `PRAGMA quick_check` on files of that size). Finds damaged pages and b-trees;
 * bytes changed inside a row's text are only found by `audit verify` (the event hash chain).
 */
export function quickCheckFile(path: string, nativeBinding?: string, home?: string): QuickCheck {
  const started = performance.now();
  let conn: BetterSqlite3.Database | null = null;
  try {
    conn = connectSqlite(path, { readonly: true, fileMustExist: true, ...(nativeBinding ? { nativeBinding } : {}) });
    conn.pragma('busy_timeout = 2000');
    // It reads every page once: a cache would only raise the leader's peak memory with the store's size.
    conn.pragma('cache_size = -64');
    const rows = conn.pragma('quick_check(5)') as { quick_check: string }[];
    const lines = rows.map((r) => r.quick_check);
    const ok = lines.length === 1 && lines[0] === 'ok';
    return { ok, problem: ok ? null : lines.join('; ').slice(0, 500), durationMs: performance.now() - started };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // A busy file, or a full disk that kept the check's connection from opening, is no verdict (the next
    // check looks again); anything else the check met is damage.
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || storeFaultOf(err, home) === 'full') return { ok: true, problem: null, durationMs: performance.now() - started };
    return { ok: false, problem: `${String(code ?? 'error')}: ${(err as Error).message}`, durationMs: performance.now() - started };
  } finally {
    conn?.close();
  }
}

/**
 * Save what a connection still holds of a store deleted under it (the inode lives on while it is open):
 * `VACUUM INTO` a new file beside it. Returns the file, or null when the copy failed too.
 */
export function rescueStore(db: Db, dest: string): string | null {
  try {
    // An empty 0600 file first (VACUUM INTO accepts an empty one): the copy holds every task, private like the store.
    touchPrivate(dest);
    db.prepare('VACUUM INTO ?').run(dest);
    return dest;
  } catch {
    return null;
  }
}
