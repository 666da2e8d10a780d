import { isPostgres, prep, type Db } from './db.js';

/**
 * Query module for the Cache Lab's tables: `usage_samples` (one row per sampled `worker.usage` event)
 * and `context_packs` (immutable, content-hashed pack versions).
 */

/** A `worker.usage` event not yet sampled, with its task and the attempt's prompt and start payloads. */
export interface UnsampledUsage {
  seq: number;
  task_id: string;
  ts: number;
  payload: string;
  worker: string;
  attempt: number;
  task_cohort: string | null;
  prompt: string | null;
  started: string | null;
}

/** Up to `limit` usage events past the last one sampled, oldest first. */
export function unsampledUsage(db: Db, limit: number): UnsampledUsage[] {
  const after = (prep(db, 'SELECT COALESCE(MAX(event_seq), 0) AS s FROM usage_samples').get() as { s: number }).s;
  return prep(
    db,
    `SELECT e.seq, e.task_id, e.ts, e.payload, t.worker, t.attempt, t.cohort AS task_cohort,
       (SELECT p.payload FROM events p WHERE p.task_id = e.task_id AND p.type = 'worker.prompt' AND p.seq < e.seq ORDER BY p.seq DESC LIMIT 1) AS prompt,
       (SELECT s.payload FROM events s WHERE s.task_id = e.task_id AND s.type = 'worker.started' AND s.seq < e.seq ORDER BY s.seq DESC LIMIT 1) AS started
     FROM events e JOIN tasks t ON t.id = e.task_id
     WHERE e.type = 'worker.usage' AND e.seq > ?
     ORDER BY e.seq LIMIT ?`,
  ).all(after, limit) as UnsampledUsage[];
}

/** One sample as stored (camelCase), its route check as text. */
export interface SampleRow {
  eventSeq: number;
  taskId: string;
  attempt: number;
  worker: string;
  cohort: string | null;
  ts: number;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  routedModel: string | null;
  reportedModel: string | null;
  route: string;
}

/** Store a sample once per event; returns 1 when added, 0 when that event was sampled already. */
export function insertSample(db: Db, s: SampleRow): number {
  return prep(
    db,
    `INSERT OR IGNORE INTO usage_samples (event_seq, task_id, attempt, worker, cohort, ts, input_tokens, cached_tokens, output_tokens, routed_model, reported_model, route)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(s.eventSeq, s.taskId, s.attempt, s.worker, s.cohort, s.ts, s.inputTokens, s.cachedTokens, s.outputTokens, s.routedModel, s.reportedModel, s.route).changes;
}

/** Samples with ts in [since, until], oldest first. */
export function samplesBetween(db: Db, since: number, until: number): SampleRow[] {
  return prep(
    db,
    `SELECT event_seq AS eventSeq, task_id AS taskId, attempt, worker, cohort, ts, input_tokens AS inputTokens, cached_tokens AS cachedTokens,
       output_tokens AS outputTokens, routed_model AS routedModel, reported_model AS reportedModel, route
     FROM usage_samples WHERE ts >= ? AND ts <= ? ORDER BY ts, event_seq`,
  ).all(since, until) as SampleRow[];
}

export interface PackRow {
  hash: string;
  name: string;
  version: string;
  text: string;
  bytes: number;
  created_at: number;
}

export function packVersion(db: Db, name: string, version: string): PackRow | null {
  return (prep(db, 'SELECT * FROM context_packs WHERE name = ? AND version = ?').get(name, version) as PackRow | undefined) ?? null;
}

/**
 * The newest version of a pack: latest created_at, and of equal ones the last inserted (the table's
 * physical row order: rowid on SQLite, ctid on PostgreSQL).
 */
export function newestPackVersion(db: Db, name: string): PackRow | null {
  return (prep(db, `SELECT * FROM context_packs WHERE name = ? ORDER BY created_at DESC, ${isPostgres(db) ? 'ctid' : 'rowid'} DESC LIMIT 1`).get(name) as PackRow | undefined) ?? null;
}

export function insertPackVersion(db: Db, p: PackRow): void {
  prep(db, 'INSERT INTO context_packs (hash, name, version, text, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(p.hash, p.name, p.version, p.text, p.bytes, p.created_at);
}

/** Every pack version, by name then newest first. */
export function listPackVersions(db: Db): PackRow[] {
  return prep(db, 'SELECT * FROM context_packs ORDER BY name, created_at DESC, version DESC').all() as PackRow[];
}

/** Delete a pack's versions (one version, or every version when `version` is null); how many went. */
export function deletePackVersions(db: Db, name: string, version: string | null): number {
  const r = version === null ? prep(db, 'DELETE FROM context_packs WHERE name = ?').run(name) : prep(db, 'DELETE FROM context_packs WHERE name = ? AND version = ?').run(name, version);
  return Number(r.changes);
}

/** Tasks pinned to any of `refs` (`name@version`), split into those still live and those ended. */
export function tasksUsingPacks(db: Db, refs: string[], ended: readonly string[]): { live: string[]; ended: number } {
  if (!refs.length) return { live: [], ended: 0 };
  const marks = refs.map(() => '?').join(', ');
  const endedMarks = ended.map(() => '?').join(', ');
  const live = prep(db, `SELECT id FROM tasks WHERE context_pack IN (${marks}) AND status NOT IN (${endedMarks}) ORDER BY created_at, id`).all(...refs, ...ended) as { id: string }[];
  const done = prep(db, `SELECT COUNT(*) AS n FROM tasks WHERE context_pack IN (${marks}) AND status IN (${endedMarks})`).get(...refs, ...ended) as { n: number | string };
  return { live: live.map((r) => r.id), ended: Number(done.n) };
}
