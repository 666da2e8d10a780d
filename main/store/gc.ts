import { TERMINAL } from '../core/model.js';
import { appendEvent } from './events.js';
import { isPostgres, prep, writeTx, type Db } from './db.js';
import { tombstoneText, type TombstoneBody } from './tombstones.js';

const ENDED = [...TERMINAL].map((s) => `'${s}'`).join(', ');

/** A task tree every task of which has ended: what gc may delete. */
export interface EndedTree {
  rootId: string;
  tasks: number;
  /** When its last task ended (ms). */
  endedAt: number;
}

/**
 * Trees whose every task ended (terminal status) before `cutoff` (ms), oldest first. `limit` bounds one
 * pass: a home with years of trees is worked through pass by pass, never loaded whole.
 */
export function listEndedTrees(db: Db, cutoff: number, limit = 1000): EndedTree[] {
  const rows = prep(
    db,
    `SELECT root_id, COUNT(*) AS n, MAX(COALESCE(ended_at, updated_at)) AS ended FROM tasks GROUP BY root_id
     HAVING SUM(CASE WHEN status IN (${ENDED}) THEN 0 ELSE 1 END) = 0 AND MAX(COALESCE(ended_at, updated_at)) < ?
     ORDER BY MAX(COALESCE(ended_at, updated_at)), root_id LIMIT ?`,
  ).all(cutoff, limit) as { root_id: string; n: number; ended: number }[];
  return rows.map((r) => ({ rootId: r.root_id, tasks: Number(r.n), endedAt: Number(r.ended) }));
}

/** One task of a tree as gc needs it: its id and the branch and worktree on record, if any. */
export interface TreeTask {
  id: string;
  status: string;
  alloc: { repo: string; path: string; branch: string; baseCommit: string; state: string; copyOf: string | null } | null;
}

export function listTreeTasks(db: Db, rootId: string): TreeTask[] {
  const rows = prep(
    db,
    `SELECT t.id, t.status, w.repo, w.path, w.branch, w.base_commit, w.state, w.copy_of FROM tasks t LEFT JOIN worktrees w ON w.task_id = t.id WHERE t.root_id = ? ORDER BY t.id`,
  ).all(rootId) as { id: string; status: string; repo: string | null; path: string; branch: string; base_commit: string; state: string; copy_of: string | null }[];
  return rows.map((r) => ({
    id: r.id,
    status: r.status,
    alloc: r.repo === null ? null : { repo: r.repo, path: r.path, branch: r.branch, baseCommit: r.base_commit, state: r.state, copyOf: r.copy_of },
  }));
}

/** Rows of a tree and the bytes they hold in the store (their text columns; indexes and pages aside). */
export interface TreeRows {
  events: number;
  bytes: number;
  /** Tasks of other trees that depend on one of this tree's tasks: such a tree is kept. */
  dependents: number;
}

export function measureTree(db: Db, rootId: string): TreeRows {
  const ev = prep(
    db,
    `SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(payload) + LENGTH(type) + 160), 0) AS b FROM events WHERE chain IN (SELECT id FROM tasks WHERE root_id = ?)`,
  ).get(rootId) as { n: number; b: number };
  const tk = prep(
    db,
    `SELECT COALESCE(SUM(LENGTH(objective) + LENGTH(name) + LENGTH(metadata) + COALESCE(LENGTH(result), 0) + COALESCE(LENGTH(error_message), 0) + 400), 0) AS b FROM tasks WHERE root_id = ?`,
  ).get(rootId) as { b: number };
  const dep = prep(
    db,
    `SELECT COUNT(*) AS n FROM task_deps d JOIN tasks t ON t.id = d.task_id WHERE t.root_id <> ? AND d.depends_on IN (SELECT id FROM tasks WHERE root_id = ?)`,
  ).get(rootId, rootId) as { n: number };
  return { events: Number(ev.n), bytes: Number(ev.b) + Number(tk.b), dependents: Number(dep.n) };
}

export interface DeletedTree {
  rootId: string;
  tasks: number;
  events: number;
  /** The tombstone event's sequence number. */
  tombstone: number;
}

/**
 * Delete one ended tree's rows (tasks and everything that cascades from them: attempts, requests, sealed
 * texts, worktree and port rows, usage samples, pull rows; its events and chain heads) and append a signed
 * tombstone (`tree.deleted`, on the system chain) naming each deleted chain's last link, all in one write
 * transaction. The tree is read again inside it: a task retried or a task of another tree made to depend
 * on it since the caller looked, or a last end newer than `cutoff`, and nothing is deleted (null).
 * Events written before per-task chains (migration 008) stay: they are links of the one legacy chain.
 */
export function deleteTreeRows(db: Db, rootId: string, cutoff: number, olderThan: string, sign: (text: string) => string): DeletedTree | null {
  return writeTx(db, () => {
    const tree = prep(
      db,
      `SELECT COUNT(*) AS n, SUM(CASE WHEN status IN (${ENDED}) THEN 0 ELSE 1 END) AS live, MAX(COALESCE(ended_at, updated_at)) AS ended FROM tasks WHERE root_id = ?`,
    ).get(rootId) as { n: number; live: number | null; ended: number | null };
    if (!Number(tree.n) || Number(tree.live) > 0 || Number(tree.ended) >= cutoff) return null;
    if (measureTree(db, rootId).dependents > 0) return null;
    const tasks = (prep(db, 'SELECT id FROM tasks WHERE root_id = ? ORDER BY id').all(rootId) as { id: string }[]).map((r) => r.id);
    const heads = prep(db, 'SELECT chain, pos, hash FROM chain_heads WHERE chain IN (SELECT id FROM tasks WHERE root_id = ?) ORDER BY chain').all(rootId) as {
      chain: string;
      pos: number;
      hash: string;
    }[];
    const { n: events } = prep(db, 'SELECT COUNT(*) AS n FROM events WHERE chain IN (SELECT id FROM tasks WHERE root_id = ?)').get(rootId) as { n: number };
    const body: TombstoneBody = { rootId, tasks, chains: heads.map((h) => [h.chain, Number(h.pos), h.hash]), endedAt: Number(tree.ended), olderThan };
    prep(db, 'DELETE FROM events WHERE chain IN (SELECT id FROM tasks WHERE root_id = ?)').run(rootId);
    prep(db, 'DELETE FROM chain_heads WHERE chain IN (SELECT id FROM tasks WHERE root_id = ?)').run(rootId);
    prep(db, 'UPDATE snapshots SET task_id = NULL WHERE task_id IN (SELECT id FROM tasks WHERE root_id = ?)').run(rootId);
    // A caller's request id whose tasks are gone would answer with tasks that no longer exist.
    if (prep(db, 'SELECT 1 AS x FROM client_requests LIMIT 1').get()) {
      const forget = prep(db, 'DELETE FROM client_requests WHERE task_ids LIKE ?');
      for (const id of tasks) forget.run(`%"${id}"%`);
    }
    // The tree's budget and each task's spend record (turns, raised limits) go with it.
    const forgetSetting = prep(db, 'DELETE FROM settings WHERE key = ?');
    forgetSetting.run(`root_budget.${rootId}`);
    for (const id of tasks) {
      forgetSetting.run(`task_guard.${id}`);
      forgetSetting.run(`run_host.${id}`);
    }
    prep(db, 'DELETE FROM tasks WHERE root_id = ?').run(rootId);
    const tombstone = appendEvent(db, null, 'tree.deleted', { ...body, signature: sign(tombstoneText(body)) });
    return { rootId, tasks: tasks.length, events: Number(events), tombstone };
  });
}

/** Which of these task ids name no task in this store. */
export function missingTaskIds(db: Db, ids: string[]): string[] {
  if (!ids.length) return [];
  const found = new Set(
    (prep(db, 'SELECT id FROM tasks WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids)) as { id: string }[]).map((r) => r.id),
  );
  return ids.filter((id) => !found.has(id));
}

/**
 * The bytes this store holds on PostgreSQL (its schema's tables, indexes and TOAST); null for SQLite,
 * whose size is its file's (and its WAL's), measured on disk by the caller.
 */
export function storeBytes(db: Db): number | null {
  if (!isPostgres(db)) return null;
  const r = prep(
    db,
    `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema() AND c.relkind = 'r'`,
  ).get() as { n: number | string };
  return Number(r.n);
}
