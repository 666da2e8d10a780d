import { createHash } from 'node:crypto';
import type { EngineEvent, EngineEventMap, EngineEventType } from '../core/event-map.js';
import { redactValue } from '../core/redact.js';
import { isPostgres, prep, writeTx, type Db } from './db.js';
import { fenceHolds, type Fence } from './fence.js';
import { coveredByTombstone, readTombstones, type ChainEnd, type SignatureCheck, type Tombstone } from './tombstones.js';

/** One event of the log, typed by its `type` (core/event-map.ts). */
export type EventRow = EngineEvent;
export type { EngineEventMap, EngineEventType };

export const GENESIS_HASH = '0'.repeat(64);

/**
 * The hash of one event before migration 008: SHA-256 over its fields and the previous row's hash, one
 * chain through the whole log (`audit_head`). Kept to verify those rows.
 */
export function hashEvent(prevHash: string, seq: number, taskId: string | null, type: string, ts: number, payload: string): string {
  return createHash('sha256')
    .update(`${prevHash}\n${seq}\n${taskId ?? ''}\n${type}\n${ts}\n${payload}`)
    .digest('hex');
}

/**
 * The hash of one event in its chain: SHA-256 over the chain, the position in it, the fields and the
 * previous link's hash. A chain is one task's events (the empty chain: events of no task), so writers
 * on many hosts never wait for one global row; `anchorChains` ties the heads together.
 */
export function hashChained(prevHash: string, chain: string, pos: number, type: string, ts: number, payload: string): string {
  return createHash('sha256').update(`${prevHash}\n${chain}\n${pos}\n${type}\n${ts}\n${payload}`).digest('hex');
}

/** A run's transaction in progress (withEventFence): events of its task land only while its fencing token holds. */
let eventFence: { db: Db; taskId: string; fence: Fence; held?: boolean } | null = null;

/**
 * Run `fn` (the body of one transaction of a task's run) with that task's events fenced to `fence`: when
 * the task is no longer that attempt of that runner (a runner that woke after its task was resumed
 * elsewhere), its events are not written (appendEvent returns 0), as its field writes are not.
 */
export function withEventFence<T>(db: Db, taskId: string, fence: Fence, fn: () => T): T {
  const outer = eventFence;
  eventFence = { db, taskId, fence };
  try {
    return fn();
  } finally {
    eventFence = outer;
  }
}

/**
 * Append one event. The payload is redacted here, so nothing secret reaches the table.
 * Must run inside a write transaction (callers compose it with the state change it records). The
 * task's chain head is read (locked, on PostgreSQL) and moved in the same transaction.
 */
export function appendEvent<K extends EngineEventType>(db: Db, taskId: string | null, type: K, payload: EngineEventMap[K], ts = Date.now()): number {
  return appendAnyEvent(db, taskId, type, payload, ts);
}

/**
 * Append an event of any type name, unchecked by the event map: for code that exercises the log itself
 * (the audit's fixtures and benches). Engine code appends through appendEvent.
 */
export function appendAnyEvent(db: Db, taskId: string | null, type: string, payload: Record<string, unknown> = {}, ts = Date.now()): number {
  const f = eventFence;
  if (f && f.db === db && f.taskId === taskId) {
    // Looked at once per transaction, at its first event of the task (a move of the run's own, fenced, comes first).
    f.held ??= fenceHolds(db, taskId, f.fence);
    if (!f.held) return 0;
  }
  const chain = taskId ?? '';
  const head = prep(db, isPostgres(db) ? 'SELECT pos, hash FROM chain_heads WHERE chain = ? FOR UPDATE' : 'SELECT pos, hash FROM chain_heads WHERE chain = ?').get(chain) as
    | { pos: number; hash: string }
    | undefined;
  const pos = (head?.pos ?? 0) + 1;
  const prev = head?.hash ?? GENESIS_HASH;
  const body = JSON.stringify(redactValue(payload));
  const hash = hashChained(prev, chain, pos, type, ts, body);
  const { seq } = prep(db, 'INSERT INTO events (task_id, type, ts, payload, prev_hash, hash, chain, chain_pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq').get(
    taskId, type, ts, body, prev, hash, chain, pos,
  ) as { seq: number };
  prep(db, 'INSERT INTO chain_heads (chain, pos, seq, hash) VALUES (?, ?, ?, ?) ON CONFLICT(chain) DO UPDATE SET pos = excluded.pos, seq = excluded.seq, hash = excluded.hash').run(chain, pos, seq, hash);
  return seq;
}

/**
 * Tie every chain head that moved since the last anchor into the next anchor: a fleet-wide chain of
 * anchors, each hashing the previous one and the heads it saw. `audit verify` checks every anchored head
 * against its event, so a whole task's chain deleted or rewritten (head row included) is still found.
 * Leaders (and every fleet runner) call this on their heartbeat; two at once: one wins the id, the other
 * changes nothing. `minIntervalMs`: no new anchor while the newest is younger than that, so many runners
 * calling on every heartbeat add one anchor per interval, not one per runner per beat (each anchor lists
 * every head that moved, so the table grows with the anchor rate). Returns the new anchor's id, or null
 * when nothing moved (or the interval has not passed).
 */
/** Is the next anchor due: none yet, or the last one at least `minIntervalMs` old? A plain read, no write lock. */
export function anchorDue(db: Db, ts: number, minIntervalMs: number): boolean {
  const last = prep(db, 'SELECT ts FROM anchors ORDER BY id DESC LIMIT 1').get() as { ts: number } | undefined;
  return !last || ts - last.ts >= minIntervalMs;
}

export function anchorChains(db: Db, ts = Date.now(), opts: { minIntervalMs?: number } = {}): number | null {
  return writeTx(db, () => {
    const last = prep(db, 'SELECT id, ts, hash FROM anchors ORDER BY id DESC LIMIT 1').get() as { id: number; ts: number; hash: string } | undefined;
    if (last && opts.minIntervalMs && ts - last.ts < opts.minIntervalMs) return null;
    const moved = prep(db, 'SELECT chain, pos, hash FROM chain_heads WHERE pos > anchored_pos ORDER BY chain LIMIT 5000').all() as { chain: string; pos: number; hash: string }[];
    if (!moved.length) return null;
    const id = (last?.id ?? 0) + 1;
    const heads = JSON.stringify(moved.map((m) => [m.chain, m.pos, m.hash]));
    const prev = last?.hash ?? GENESIS_HASH;
    const hash = hashAnchor(prev, id, ts, heads);
    // Another anchorer may have taken this id meanwhile (PostgreSQL): then this one changes nothing.
    const ins = prep(db, 'INSERT OR IGNORE INTO anchors (id, ts, heads, prev_hash, hash) VALUES (?, ?, ?, ?, ?)').run(id, ts, heads, prev, hash);
    if (ins.changes !== 1) return null;
    const mark = prep(db, 'UPDATE chain_heads SET anchored_pos = ? WHERE chain = ? AND anchored_pos < ?');
    for (const m of moved) mark.run(m.pos, m.chain, m.pos);
    return id;
  });
}

export function hashAnchor(prevHash: string, id: number, ts: number, heads: string): string {
  return createHash('sha256').update(`anchor\n${prevHash}\n${id}\n${ts}\n${heads}`).digest('hex');
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
    .all(...args, limit + 1) as StoredEvent[];
  const more = rows.length > limit;
  if (more) rows.pop();
  if (opts.newest) rows.reverse();
  const events = rows.map(toEventRow);
  const cursor = events.length ? events[events.length - 1].seq : (opts.after ?? 0);
  return { events, cursor, more };
}

/** The events with these sequence numbers (those that exist), oldest first. */
export function listEventsBySeq(db: Db, seqs: number[]): EventRow[] {
  const rows = prep(db, 'SELECT seq, task_id, type, ts, payload FROM events WHERE seq IN (SELECT CAST(value AS INTEGER) FROM json_each(?)) ORDER BY seq').all(JSON.stringify(seqs)) as StoredEvent[];
  return rows.map(toEventRow);
}

type StoredEvent = { seq: number; task_id: string | null; type: string; ts: number; payload: string };

function toEventRow(r: StoredEvent): EventRow {
  // Written by appendEvent, so typed by the map; a type this version does not know reads back all the same.
  return { seq: r.seq, taskId: r.task_id, type: r.type, ts: r.ts, payload: JSON.parse(r.payload) } as EventRow;
}

export function latestSeq(db: Db): number {
  const row = prep(db, 'SELECT MAX(seq) AS seq FROM events').get() as { seq: number | null } | undefined;
  return row?.seq ?? 0;
}

export interface AuditResult {
  ok: boolean;
  checked: number;
  /** The first broken link, when not ok. */
  broken?: { seq: number; reason: string };
  /** Trees gc deleted, by their tombstones (present only when there are some; the newest 20 listed). */
  tombstones?: { count: number; trees: Tombstone[] };
}

type Broken = { seq: number; reason: string };

/** Rows per read while verifying: a long log is walked in pages, never loaded whole (PgDb reads a statement's rows at once). */
const VERIFY_PAGE = 2000;
/** Anchors per read: one anchor lists up to 5000 heads. */
const ANCHOR_PAGE = 50;

/** The newest position of a chain some anchor recorded, and its hash then. */
type Anchored = { pos: number; hash: string; anchor: number };

/**
 * Walk every chain: edited rows, deleted rows (a position missing, a wrong previous hash) and a deleted
 * tail (the chain's head row says more) are found. The anchors are checked first (their own chain, and
 * each one's hash over the heads it recorded); then every chain must still reach, unchanged, the newest
 * position an anchor recorded for it, which catches a chain deleted or rewritten together with its head
 * row (the hash at that position covers every event before it, so checking the newest one suffices).
 * Each head row's `anchored_pos` must match the anchors, so dropping the newest anchors shows too.
 * Events written before migration 008 form one legacy chain, verified as before. Everything is read in
 * one snapshot (REPEATABLE READ on PostgreSQL), so runners appending meanwhile never look like tampering.
 */
export function verifyAudit(db: Db, opts: { checkSignature?: SignatureCheck } = {}): AuditResult {
  const outermost = !db.inTransaction;
  return db.transaction(() => {
    if (isPostgres(db) && outermost) db.exec('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    let checked = 0;
    const legacy = verifyLegacy(db);
    checked += legacy.checked;
    if (legacy.broken) return { ok: false, checked, broken: legacy.broken };
    const anchors = readAnchors(db);
    if (anchors.broken) return { ok: false, checked, broken: anchors.broken };
    const tombs = readTombstones(db, opts.checkSignature);
    if (tombs.broken) return { ok: false, checked, broken: tombs.broken };
    const chains = verifyChains(db, anchors.anchored, tombs.ends);
    checked += chains.checked;
    if (chains.broken) return { ok: false, checked, broken: chains.broken };
    return tombs.list.length ? { ok: true, checked, tombstones: { count: tombs.list.length, trees: tombs.list.slice(-20) } } : { ok: true, checked };
  })();
}

type Row = { seq: number; task_id: string | null; type: string; ts: number; payload: string; prev_hash: string; hash: string; chain: string | null; chain_pos: number | null };

function verifyLegacy(db: Db): { checked: number; broken?: Broken } {
  let prevHash = GENESIS_HASH;
  let expectSeq = 1;
  let checked = 0;
  const page = prep(db, 'SELECT seq, task_id, type, ts, payload, prev_hash, hash FROM events WHERE chain IS NULL AND seq > ? ORDER BY seq LIMIT ?');
  for (let after = 0, rows: Row[]; (rows = page.all(after, VERIFY_PAGE) as Row[]).length; after = rows[rows.length - 1].seq) {
    for (const r of rows) {
      if (r.seq !== expectSeq) return { checked, broken: { seq: expectSeq, reason: `event ${expectSeq} is missing (next present is ${r.seq})` } };
      if (r.prev_hash !== prevHash) return { checked, broken: { seq: r.seq, reason: `event ${r.seq} does not link to event ${r.seq - 1}` } };
      if (hashEvent(r.prev_hash, r.seq, r.task_id, r.type, r.ts, r.payload) !== r.hash) return { checked, broken: { seq: r.seq, reason: `event ${r.seq} was modified (hash mismatch)` } };
      prevHash = r.hash;
      expectSeq++;
      checked++;
    }
    if (rows.length < VERIFY_PAGE) break;
  }
  const head = prep(db, 'SELECT seq, hash FROM audit_head WHERE id = 1').get() as { seq: number; hash: string } | undefined;
  if (head && (head.seq !== expectSeq - 1 || head.hash !== prevHash)) {
    return { checked, broken: { seq: expectSeq, reason: `events ${expectSeq}..${head.seq} were deleted from the end of the log` } };
  }
  return { checked };
}

function chainName(chain: string): string {
  return chain ? `task ${chain}` : 'the system chain';
}

type Head = { chain: string; pos: number; seq: number; hash: string; anchored_pos: number };

/** The end of one chain's walk: its head row and its anchors must agree with what was walked. */
function endChain(chain: string, pos: number, hash: string, lastSeq: number, head: Head | undefined, anchored: Anchored | undefined): Broken | undefined {
  if (anchored && anchored.pos > pos) {
    return { seq: head?.seq ?? lastSeq, reason: `events ${pos + 1}..${anchored.pos} of ${chainName(chain)}, anchored by anchor ${anchored.anchor}, were deleted` };
  }
  if (head && head.pos === pos && head.hash === hash && head.seq !== lastSeq) {
    // The hash covers the position, not seq: a renumbered event is seen by its head (and by the order below).
    return { seq: lastSeq, reason: `the newest event of ${chainName(chain)} is numbered ${lastSeq}, but its head records event ${head.seq} (sequence numbers were changed)` };
  }
  if (!head || head.pos !== pos || head.hash !== hash) {
    return { seq: head ? head.seq : lastSeq, reason: `events after position ${pos} of ${chainName(chain)} were deleted from the end of its chain${head ? ` (its head is event ${head.seq}, position ${head.pos})` : ' (no head recorded)'}` };
  }
  if (head.anchored_pos !== (anchored?.pos ?? 0)) {
    return { seq: head.seq, reason: `${chainName(chain)} was anchored up to position ${head.anchored_pos}, but no anchor records that (anchors were deleted from the end)` };
  }
  return undefined;
}

function verifyChains(db: Db, anchoredHeads: Map<string, Anchored>, deleted: Map<string, ChainEnd>): { checked: number; broken?: Broken } {
  const heads = new Map((prep(db, 'SELECT chain, pos, seq, hash, anchored_pos FROM chain_heads').all() as Head[]).map((h) => [h.chain, h]));
  const unseen = new Map(anchoredHeads);
  let checked = 0;
  let chain: string | null = null;
  let pos = 0;
  let prevHash = GENESIS_HASH;
  let lastSeq = 0;
  const finish = (): Broken | undefined => {
    if (chain === null) return undefined;
    const b = endChain(chain, pos, prevHash, lastSeq, heads.get(chain), anchoredHeads.get(chain));
    heads.delete(chain);
    unseen.delete(chain);
    return b;
  };
  const page = prep(db, 'SELECT seq, task_id, type, ts, payload, prev_hash, hash, chain, chain_pos FROM events WHERE chain IS NOT NULL AND (chain, chain_pos) > (?, ?) ORDER BY chain, chain_pos LIMIT ?');
  for (let key: [string, number] = ['', 0], rows: Row[]; (rows = page.all(...key, VERIFY_PAGE) as Row[]).length; key = [rows[rows.length - 1].chain!, rows[rows.length - 1].chain_pos!]) {
    for (const r of rows) {
      if (r.chain !== chain) {
        const b = finish();
        if (b) return { checked, broken: b };
        chain = r.chain;
        pos = 0;
        prevHash = GENESIS_HASH;
        lastSeq = 0;
      }
      const c = r.chain!;
      // One chain's events are written in order (its head row is locked for each), so seq grows with the position.
      if (r.seq <= lastSeq) return { checked, broken: { seq: r.seq, reason: `event ${r.seq} (position ${r.chain_pos} of ${chainName(c)}) is numbered before event ${lastSeq} at position ${pos} (sequence numbers were swapped)` } };
      if (r.chain_pos !== pos + 1) return { checked, broken: { seq: r.seq, reason: `event ${pos + 1} of ${chainName(c)} is missing (next present is event ${r.seq}, position ${r.chain_pos})` } };
      if (r.prev_hash !== prevHash) return { checked, broken: { seq: r.seq, reason: `event ${r.seq} does not link to the previous event of ${chainName(c)}` } };
      if (hashChained(r.prev_hash, c, pos + 1, r.type, r.ts, r.payload) !== r.hash || (r.task_id ?? '') !== c) {
        return { checked, broken: { seq: r.seq, reason: `event ${r.seq} was modified (hash mismatch)` } };
      }
      const anchored = anchoredHeads.get(c);
      if (anchored && anchored.pos === pos + 1 && anchored.hash !== r.hash) {
        return { checked, broken: { seq: r.seq, reason: `event ${r.seq} (${chainName(c)}) or an event before it, anchored by anchor ${anchored.anchor}, was rewritten (hash mismatch)` } };
      }
      pos++;
      prevHash = r.hash;
      lastSeq = r.seq;
      checked++;
    }
    if (rows.length < VERIFY_PAGE) break;
  }
  const b = finish();
  if (b) return { checked, broken: b };
  for (const [c, a] of unseen) {
    // A tree gc deleted: its signed tombstone names where this chain ended.
    if (coveredByTombstone(deleted, c, a)) continue;
    return { checked, broken: { seq: heads.get(c)?.seq ?? 0, reason: `all events of ${chainName(c)} were deleted (anchor ${a.anchor} recorded ${a.pos})` } };
  }
  for (const h of heads.values()) {
    return { checked, broken: { seq: h.seq, reason: `all ${h.pos} events of ${chainName(h.chain)} were deleted from the end of its chain (its head was event ${h.seq})` } };
  }
  return { checked };
}

/**
 * Check the anchors' own chain (no id missing, each hash over its predecessor and the heads it lists)
 * and collect, per chain, the newest position an anchor recorded.
 */
function readAnchors(db: Db): { anchored: Map<string, Anchored>; broken?: Broken } {
  const anchored = new Map<string, Anchored>();
  let prev = GENESIS_HASH;
  let expect = 1;
  const page = prep(db, 'SELECT id, ts, heads, prev_hash, hash FROM anchors WHERE id > ? ORDER BY id LIMIT ?');
  type AnchorRow = { id: number; ts: number; heads: string; prev_hash: string; hash: string };
  for (let after = 0, rows: AnchorRow[]; (rows = page.all(after, ANCHOR_PAGE) as AnchorRow[]).length; after = rows[rows.length - 1].id) {
    for (const a of rows) {
      if (a.id !== expect) return { anchored, broken: { seq: 0, reason: `anchor ${expect} is missing (next present is ${a.id})` } };
      if (a.prev_hash !== prev || hashAnchor(a.prev_hash, a.id, a.ts, a.heads) !== a.hash) return { anchored, broken: { seq: 0, reason: `anchor ${a.id} was modified (hash mismatch)` } };
      for (const [chain, pos, hash] of JSON.parse(a.heads) as [string, number, string][]) {
        if (pos > (anchored.get(chain)?.pos ?? 0)) anchored.set(chain, { pos, hash, anchor: a.id });
      }
      prev = a.hash;
      expect++;
    }
    if (rows.length < ANCHOR_PAGE) break;
  }
  return { anchored };
}
