import { prep, type Db } from './db.js';
import { appendEvent } from './events.js';

export interface Candidate {
  id: string;
  rootId: string;
  workspace: string;
  worker: string;
  priority: number;
  cohort: string | null;
}

/** Trees and gateways whose tasks may not start now (beside the workers that cannot). */
export interface CandidateExclusions {
  roots?: string[];
  gateways?: string[];
}

export interface ClaimLimits {
  perRoot: number;
  perRepository: number;
}

/** The dispatch query (exported so tests can check it reads the ready set's index). */
export const CANDIDATES_SQL = `SELECT t.id, t.root_id AS rootId, t.workspace, t.worker, t.priority, t.cohort AS cohort
       FROM tasks t INDEXED BY tasks_ready
       WHERE t.status = 'queued' AND t.deps_pending = 0
         AND t.worker NOT IN (SELECT value FROM json_each(?))
         AND t.root_id NOT IN (SELECT value FROM json_each(?))
         AND COALESCE(t.gateway, '') NOT IN (SELECT value FROM json_each(?))
         AND (SELECT COUNT(*) FROM tasks a WHERE a.status IN ('starting','running','verifying') AND a.root_id = t.root_id)
             < COALESCE((SELECT CAST(json_extract(s.value, '$.concurrency') AS INTEGER) FROM settings s WHERE s.key = 'root_budget.' || t.root_id), ?)
         AND (SELECT COUNT(*) FROM tasks a WHERE a.status IN ('starting','running','verifying') AND a.workspace = t.workspace) < ?
       ORDER BY t.priority DESC, t.id
       LIMIT ?`;

/**
 * Runnable queued tasks, best first by priority then age: every dependency completed or accepted
 * (`deps_pending = 0`: the ready set, migration 006, read through its partial index), and their root and
 * repository under the limits (a root's own budget, tasks/budget.ts, over perRoot). `excludeWorkers` lists
 * workers that cannot take work now, `exclude.roots` trees that may start nothing now (a tree total reached),
 * `exclude.gateways` gateways that take no work now (an open breaker).
 */
export function listCandidates(db: Db, limits: ClaimLimits, excludeWorkers: string[], max = 64, exclude: CandidateExclusions = {}): Candidate[] {
  const rows = prep(db, CANDIDATES_SQL).all(JSON.stringify(excludeWorkers), JSON.stringify(exclude.roots ?? []), JSON.stringify(exclude.gateways ?? []), limits.perRoot, limits.perRepository, max) as Candidate[];
  return rows;
}

/**
 * Claim one task: a single compare-and-set UPDATE from queued to starting. Returns false when another
 * process claimed it first. Runs in the caller's transaction together with the attempt row and event.
 */
export function claimTask(db: Db, id: string, runnerId: string, now = Date.now()): boolean {
  const res = prep(db, `UPDATE tasks SET status = 'starting', runner_id = ?, started_at = ?, updated_at = ? WHERE id = ? AND status = 'queued'`)
    .run(runnerId, now, now, id);
  if (res.changes !== 1) return false;
  const { attempt } = prep(db, 'SELECT attempt FROM tasks WHERE id = ?').get(id) as { attempt: number };
  prep(db, 
    `INSERT INTO attempts (task_id, attempt, runner_id, status, started_at) VALUES (?, ?, ?, 'starting', ?)
     ON CONFLICT(task_id, attempt) DO UPDATE SET runner_id = excluded.runner_id, status = 'starting', started_at = excluded.started_at`,
  ).run(id, attempt, runnerId, now);
  appendEvent(db, id, 'task.status', { from: 'queued', to: 'starting', runner: runnerId, attempt }, now);
  return true;
}

/**
 * Pick the next candidate: highest priority first; within it, round-robin across roots (the root
 * dispatched longest ago wins), with at most one extra pick of the previous cache cohort in a row:
 * after one pick of cohort C (`streak` 1) the next pick prefers C (round-robin among C's roots); after
 * that (`streak` ≥ 2) plain round-robin decides, so cache reuse never starves other roots.
 */
export function pickCandidate(cands: Candidate[], lastDispatch: Map<string, number>, affinity: { cohort: string | null; streak: number }): Candidate | null {
  if (!cands.length) return null;
  const top = cands[0].priority;
  const tier = cands.filter((c) => c.priority === top);
  if (affinity.cohort && affinity.streak < 2) {
    const same = tier.filter((c) => c.cohort === affinity.cohort);
    if (same.length) return leastRecentRoot(same, lastDispatch);
  }
  return leastRecentRoot(tier, lastDispatch);
}

/** The first candidate whose root was dispatched longest ago (never = 0). */
function leastRecentRoot(list: Candidate[], lastDispatch: Map<string, number>): Candidate {
  let best = list[0];
  let bestAt = lastDispatch.get(best.rootId) ?? 0;
  for (const c of list) {
    const at = lastDispatch.get(c.rootId) ?? 0;
    if (at < bestAt) {
      best = c;
      bestAt = at;
    }
  }
  return best;
}
