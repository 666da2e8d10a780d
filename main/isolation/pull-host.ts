import type { Config } from '../core/config.js';
import type { HomePaths } from '../core/home.js';
import type { Db } from '../store/db.js';
import { listEvents } from '../store/events.js';
import type { Task } from '../tasks/types.js';
import type { Allocation } from '../store/worktrees.js';

/**
 * What pull requests need of an open home: its store, config, paths and write transaction. The Engine
 * passes as one (commands and the leader hand theirs in), so this code sits below it in the layers.
 */
export interface PullHost {
  readonly db: Db;
  readonly config: Config;
  readonly home: HomePaths;
  write<T>(fn: () => T): T;
}

/** The verification outcome of the task's recorded head: the worktree row's when set, else its latest verify.completed. */
export function verifiedHead(host: PullHost, task: Task, alloc: Allocation): { ok: boolean; commit: string | null } | null {
  if (alloc.verifyOk !== null) return { ok: alloc.verifyOk, commit: alloc.verifiedCommit };
  const { events } = listEvents(host.db, { taskId: task.id, types: ['verify.completed'], limit: 5000 });
  const last = events.filter((e) => e.payload.attempt === task.attempt).at(-1);
  return last ? { ok: last.payload.ok === true, commit: (last.payload.commit as string | null) ?? null } : null;
}
