import type { Db } from './db.js';

/** Questions the planner and team drivers ask of tasks and events (orchestration/). */

/** A task.status event that puts a task back in play (a retry, a follow-up, a released block); not an accept. */
const BACK_IN_PLAY = `json_extract(payload, '$.to') IN ('queued', 'awaiting_approval')`;

/** How many tasks the plan task `planId` already expanded into (its children that name it planner). */
export function planChildrenCount(db: Db, planId: string): number {
  return (db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE parent_id = ? AND json_extract(metadata, '$.plan.planner') = ?`).get(planId, planId) as { n: number }).n;
}

/** Was any of these tasks put back in play after event `seq`? */
export function backInPlaySince(db: Db, seq: number, taskIds: string[]): boolean {
  return (
    db.prepare(`SELECT 1 FROM events WHERE type = 'task.status' AND seq > ? AND ${BACK_IN_PLAY} AND task_id IN (${taskIds.map(() => '?').join(',')}) LIMIT 1`).get(seq, ...taskIds) !==
    undefined
  );
}

/**
 * Roots of teams of these strategies with no current `team.ended` record (none, or one older than a
 * member's latest return to play).
 */
export function unendedTeamRoots(db: Db, strategies: readonly string[]): string[] {
  const rows = db
    .prepare(
      `SELECT DISTINCT t.root_id AS r FROM tasks t WHERE json_extract(t.metadata, '$.team.strategy') IN (${strategies.map(() => '?').join(',')})
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.task_id = t.root_id AND e.type = 'team.ended' AND e.seq >
         (SELECT COALESCE(MAX(s.seq), 0) FROM events s JOIN tasks m ON m.id = s.task_id WHERE m.root_id = t.root_id AND s.type = 'task.status' AND ${BACK_IN_PLAY.replaceAll('payload', 's.payload')}))`,
    )
    .all(...strategies) as { r: string }[];
  return rows.map((row) => row.r);
}
