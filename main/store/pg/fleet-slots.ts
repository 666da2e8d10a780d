import { prep, type Db } from '../db.js';

/**
 * The fleet's concurrency limits as slot rows (PostgreSQL migration 007, `claim_slots`): a limit key —
 * `fleet`, `repo:<identity>`, `root:<root id>` — has one row per slot, and a running task holds one slot of
 * each of its keys. A claim takes a free slot of every key with `FOR UPDATE SKIP LOCKED`, so claims never
 * wait on one another and never on a fleet-wide lock; two claims can never hold one slot, so no limit is
 * exceeded. A slot is released by a trigger when its task leaves starting/running/verifying (whoever moves
 * it: its runner, a recovering runner, cancel), so every path frees it. Rows are made on demand, a few at a
 * time up to the limit: a limit of 100,000 costs rows only for the slots ever used at once.
 */
export interface SlotKey {
  key: string;
  limit: number;
}

export type SlotGrab = { ok: true } | { ok: false; full: string | null };

const GROW_BY = 8;

/**
 * One free slot of each key, in one statement: all of them, or none (a key at its limit — counting held
 * slots, so a lowered limit holds as soon as enough of them are free — or whose free slots another claim has
 * locked this instant). The root key's limit is the root's own budget when it has one.
 */
const GRAB_SQL = `WITH want AS (
    SELECT key, lim FROM (VALUES (?, CAST(? AS INTEGER)), (?, CAST(? AS INTEGER)),
      (?, COALESCE((SELECT CAST(json_extract(s.value, '$.concurrency') AS INTEGER) FROM settings s WHERE s.key = ?), CAST(? AS INTEGER)))) v(key, lim)
  ),
  pick AS (
    SELECT f.key, f.n FROM want w
    CROSS JOIN LATERAL (SELECT c.key, c.n FROM claim_slots c WHERE c.key = w.key AND c.n < w.lim AND c.task_id IS NULL ORDER BY c.n LIMIT 1 FOR UPDATE SKIP LOCKED) f
    WHERE (SELECT COUNT(*) FROM claim_slots h WHERE h.key = w.key AND h.task_id IS NOT NULL) < w.lim
  )
  UPDATE claim_slots s SET task_id = ? FROM pick
  WHERE s.key = pick.key AND s.n = pick.n AND (SELECT COUNT(*) FROM pick) = 3
  RETURNING s.key`;

/** Per key: slots made below the limit, free ones among them, and held ones (any). */
const STATE_SQL = `SELECT w.key, w.lim,
    (SELECT COUNT(*) FROM claim_slots c WHERE c.key = w.key AND c.n < w.lim) AS made,
    (SELECT COUNT(*) FROM claim_slots c WHERE c.key = w.key AND c.n < w.lim AND c.task_id IS NULL) AS free,
    (SELECT COUNT(*) FROM claim_slots c WHERE c.key = w.key AND c.task_id IS NOT NULL) AS held
  FROM (VALUES (?, CAST(? AS INTEGER)), (?, CAST(? AS INTEGER)),
      (?, COALESCE((SELECT CAST(json_extract(s.value, '$.concurrency') AS INTEGER) FROM settings s WHERE s.key = ?), CAST(? AS INTEGER)))) w(key, lim)`;

/** Slots 0 … upTo-1 of a key (the missing ones; existing ones are left alone, so holes left by a root's cleanup fill). */
const GROW_SQL = `INSERT INTO claim_slots (key, n) SELECT ?, g FROM generate_series(0, CAST(? AS INTEGER) - 1) g ON CONFLICT DO NOTHING`;

export const fleetSlotKey = (): string => 'fleet';
export const repoSlotKey = (repo: string): string => `repo:${repo}`;
export const rootSlotKey = (rootId: string): string => `root:${rootId}`;

function args(fleet: SlotKey, repo: SlotKey, rootId: string, perRoot: number): unknown[] {
  return [fleet.key, fleet.limit, repo.key, repo.limit, rootSlotKey(rootId), `root_budget.${rootId}`, perRoot];
}

/**
 * Take a slot of the fleet, the repository and the root for `taskId`, in the caller's claim transaction.
 * `full` names the key at its limit (every slot below it held by a running task) when the grab failed for
 * that reason; null when free slots exist but other claims hold them right now (try again shortly).
 */
export function grabClaimSlots(db: Db, taskId: string, fleet: SlotKey, repo: SlotKey, rootId: string, perRoot: number): SlotGrab {
  const a = args(fleet, repo, rootId, perRoot);
  for (let round = 0; round < 3; round++) {
    if ((prep(db, GRAB_SQL).all(...a, taskId) as unknown[]).length === 3) return { ok: true };
    const state = prep(db, STATE_SQL).all(...a) as { key: string; lim: number; made: number; free: number; held: number }[];
    const full = state.find((s) => s.held >= s.lim);
    if (full) return { ok: false, full: full.key };
    // No free slot made yet below the limit: make a few more (holes first), then grab again.
    const short = state.filter((s) => s.free === 0 && s.made < s.lim);
    if (!short.length) return { ok: false, full: null };
    for (const s of short) prep(db, GROW_SQL).run(s.key, Math.min(s.lim, s.made + GROW_BY));
  }
  return { ok: false, full: null };
}

/** Give back the slots a claim took (it could not complete after all). The release trigger covers every other way out. */
export function releaseClaimSlots(db: Db, taskId: string): void {
  prep(db, 'UPDATE claim_slots SET task_id = NULL WHERE task_id = ?').run(taskId);
}

/** The slot rows (migration 007), filled with the tasks running when it runs. */
export const CLAIM_SLOTS_SQL = `
CREATE TABLE claim_slots (
  key     TEXT NOT NULL,
  n       INTEGER NOT NULL,
  task_id TEXT,
  PRIMARY KEY (key, n)
);
CREATE INDEX claim_slots_task ON claim_slots(task_id) WHERE task_id IS NOT NULL;
INSERT INTO claim_slots (key, n, task_id)
  SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) - 1, id FROM (
    SELECT id, 'fleet' AS k FROM tasks WHERE status IN ('starting', 'running', 'verifying')
    UNION ALL SELECT id, 'repo:' || COALESCE(repo_key, workspace) FROM tasks WHERE status IN ('starting', 'running', 'verifying')
    UNION ALL SELECT id, 'root:' || root_id FROM tasks WHERE status IN ('starting', 'running', 'verifying')
  ) a;
-- A task that stops running (or is deleted) frees its slots; a root with nothing running keeps no rows.
CREATE FUNCTION lw_release_slots() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $f$ BEGIN
  UPDATE claim_slots SET task_id = NULL WHERE task_id = OLD.id;
  DELETE FROM claim_slots d WHERE d.key = 'root:' || OLD.root_id
    AND d.n IN (SELECT c.n FROM claim_slots c WHERE c.key = 'root:' || OLD.root_id AND c.task_id IS NULL FOR UPDATE SKIP LOCKED)
    AND NOT EXISTS (SELECT 1 FROM claim_slots h WHERE h.key = 'root:' || OLD.root_id AND h.task_id IS NOT NULL);
  RETURN NULL;
END $f$;
CREATE TRIGGER tasks_release_slots AFTER UPDATE OF status ON tasks FOR EACH ROW
  WHEN (OLD.status IN ('starting', 'running', 'verifying') AND NEW.status NOT IN ('starting', 'running', 'verifying'))
  EXECUTE FUNCTION lw_release_slots();
CREATE TRIGGER tasks_release_slots_deleted AFTER DELETE ON tasks FOR EACH ROW
  WHEN (OLD.status IN ('starting', 'running', 'verifying'))
  EXECUTE FUNCTION lw_release_slots();
`;
