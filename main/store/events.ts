import { createHash } from 'node:crypto';
import { redactValue } from '../core/redact.js';
import { prep, type Db } from './db.js';

export interface EventRow {
  seq: number;
  taskId: string | null;
  type: string;
  ts: number;
  payload: Record<string, unknown>;
}

export const GENESIS_HASH = '0'.repeat(64);

/** The hash of one event row: SHA-256 over its fields and the previous row's hash. */
export function hashEvent(prevHash: string, seq: number, taskId: string | null, type: string, ts: number, payload: string): string {
  return createHash('sha256')
    .update(`${prevHash}\n${seq}\n${taskId ?? ''}\n${type}\n${ts}\n${payload}`)
    .digest('hex');
}

/**
 * Append one event. The payload is redacted here, so nothing secret reaches the table.
 * Must run inside a write transaction (callers compose it with the state change it records).
 */
export function appendEvent(db: Db, taskId: string | null, type: string, payload: Record<string, unknown> = {}, ts = Date.now()): number {
  const head = prep(db, 'SELECT seq, hash FROM audit_head WHERE id = 1').get() as { seq: number; hash: string } | undefined;
  const seq = (head?.seq ?? 0) + 1;
  const prev = head?.hash ?? GENESIS_HASH;
  const body = JSON.stringify(redactValue(payload));
  const hash = hashEvent(prev, seq, taskId, type, ts, body);
  prep(db, 'INSERT INTO events (seq, task_id, type, ts, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    seq, taskId, type, ts, body, prev, hash,
  );
  prep(db, 'INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash').run(seq, hash);
  return seq;
}

export interface ListEventsOptions {
  /** Return events with seq > after. */
  after?: number;
  taskId?: string;
  /** Include the events of every task in this task's tree. */
  rootId?: string;
  types?: string[];
  limit?: number;
  /** Return events with seq < before. */
  before?: number;
  /** The newest `limit` matching events (still returned oldest first), instead of the oldest. */
  newest?: boolean;
}

/**
 * Cursor-paged read of the event log, oldest first. `more` says whether matching events were left out
 * beyond the page: after it (oldest-first paging) or before it (`newest`).
 */
export function listEvents(db: Db, opts: ListEventsOptions = {}): { events: EventRow[]; cursor: number; more: boolean } {
  const where: string[] = ['seq > ?'];
  const args: unknown[] = [opts.after ?? 0];
  if (opts.before !== undefined) {
    where.push('seq < ?');
    args.push(opts.before);
  }
  if (opts.taskId) {
    where.push('task_id = ?');
    args.push(opts.taskId);
  }
  if (opts.rootId) {
    where.push('task_id IN (SELECT id FROM tasks WHERE root_id = ?)');
    args.push(opts.rootId);
  }
  if (opts.types?.length) {
    where.push(`type IN (${opts.types.map(() => '?').join(',')})`);
    args.push(...opts.types);
  }
  const limit = Math.min(Math.max(opts.limit ?? 500, 1), 5000);
  // One row past the page tells whether more exist, without a COUNT over a long log.
  const rows = prep(db, `SELECT seq, task_id, type, ts, payload FROM events WHERE ${where.join(' AND ')} ORDER BY seq ${opts.newest ? 'DESC' : ''} LIMIT ?`)
    .all(...args, limit + 1) as { seq: number; task_id: string | null; type: string; ts: number; payload: string }[];
  const more = rows.length > limit;
  if (more) rows.pop();
  if (opts.newest) rows.reverse();
  const events = rows.map((r) => ({ seq: r.seq, taskId: r.task_id, type: r.type, ts: r.ts, payload: JSON.parse(r.payload) as Record<string, unknown> }));
  const cursor = events.length ? events[events.length - 1].seq : (opts.after ?? 0);
  return { events, cursor, more };
}

export function latestSeq(db: Db): number {
  const row = prep(db, 'SELECT seq FROM audit_head WHERE id = 1').get() as { seq: number } | undefined;
  return row?.seq ?? 0;
}

export interface AuditResult {
  ok: boolean;
  checked: number;
  /** The first broken link, when not ok. */
  broken?: { seq: number; reason: string };
}

/** Walk the whole chain: edited rows, deleted rows (gaps, wrong prev hash) and a truncated tail are found. */
export function verifyAudit(db: Db): AuditResult {
  const stmt = prep(db, 'SELECT seq, task_id, type, ts, payload, prev_hash, hash FROM events ORDER BY seq');
  let prevHash = GENESIS_HASH;
  let expectSeq = 1;
  let checked = 0;
  for (const r of stmt.iterate() as Iterable<{ seq: number; task_id: string | null; type: string; ts: number; payload: string; prev_hash: string; hash: string }>) {
    if (r.seq !== expectSeq) return { ok: false, checked, broken: { seq: expectSeq, reason: `event ${expectSeq} is missing (next present is ${r.seq})` } };
    if (r.prev_hash !== prevHash) return { ok: false, checked, broken: { seq: r.seq, reason: `event ${r.seq} does not link to event ${r.seq - 1}` } };
    const h = hashEvent(r.prev_hash, r.seq, r.task_id, r.type, r.ts, r.payload);
    if (h !== r.hash) return { ok: false, checked, broken: { seq: r.seq, reason: `event ${r.seq} was modified (hash mismatch)` } };
    prevHash = r.hash;
    expectSeq++;
    checked++;
  }
  const head = prep(db, 'SELECT seq, hash FROM audit_head WHERE id = 1').get() as { seq: number; hash: string } | undefined;
  if (head && (head.seq !== expectSeq - 1 || head.hash !== prevHash)) {
    return { ok: false, checked, broken: { seq: expectSeq, reason: `events ${expectSeq}..${head.seq} were deleted from the end of the log` } };
  }
  return { ok: true, checked };
}
