import type { Db } from './db.js';

/** Query module for the `worktrees` table (migration 003); only this file sees snake_case. */

export type AllocationState = 'allocating' | 'ready' | 'released';

export interface Allocation {
  taskId: string;
  repo: string;
  path: string;
  branch: string;
  baseRef: string;
  baseCommit: string;
  state: AllocationState;
  ownerPid: number;
  ownerStart: string | null;
  headCommit: string | null;
  verifiedCommit: string | null;
  verifyOk: boolean | null;
  attempt: number;
  createdAt: number;
  readyAt: number | null;
  releasedAt: number | null;
  releaseReason: string | null;
  /** Copy isolation: the plain folder this allocation is a private git copy of (repo and path are the copy). */
  copyOf: string | null;
}

interface Row {
  task_id: string;
  repo: string;
  path: string;
  branch: string;
  base_ref: string;
  base_commit: string;
  state: AllocationState;
  owner_pid: number;
  owner_start: string | null;
  head_commit: string | null;
  verified_commit: string | null;
  verify_ok: number | null;
  attempt: number;
  created_at: number;
  ready_at: number | null;
  released_at: number | null;
  release_reason: string | null;
  copy_of: string | null;
}

function toAllocation(r: Row): Allocation {
  return {
    taskId: r.task_id,
    repo: r.repo,
    path: r.path,
    branch: r.branch,
    baseRef: r.base_ref,
    baseCommit: r.base_commit,
    state: r.state,
    ownerPid: r.owner_pid,
    ownerStart: r.owner_start,
    headCommit: r.head_commit,
    verifiedCommit: r.verified_commit,
    verifyOk: r.verify_ok === null ? null : r.verify_ok === 1,
    attempt: r.attempt,
    createdAt: r.created_at,
    readyAt: r.ready_at,
    releasedAt: r.released_at,
    releaseReason: r.release_reason,
    copyOf: r.copy_of ?? null,
  };
}

export function getAllocation(db: Db, taskId: string): Allocation | null {
  const r = db.prepare('SELECT * FROM worktrees WHERE task_id = ?').get(taskId) as Row | undefined;
  return r ? toAllocation(r) : null;
}

export function listAllocations(db: Db, states?: AllocationState[]): Allocation[] {
  const rows = states?.length
    ? (db
        .prepare(`SELECT * FROM worktrees WHERE state IN (${states.map(() => '?').join(',')}) ORDER BY created_at`)
        .all(...states) as Row[])
    : (db.prepare('SELECT * FROM worktrees ORDER BY created_at').all() as Row[]);
  return rows.map(toAllocation);
}

export type NewAllocation = Pick<Allocation, 'taskId' | 'repo' | 'path' | 'branch' | 'baseRef' | 'baseCommit' | 'ownerPid' | 'ownerStart' | 'attempt'> & {
  copyOf?: string | null;
};

/** Phase 1: the named record, written before anything touches disk (replaces a released row of an earlier attempt). */
export function insertAllocating(db: Db, a: NewAllocation, now = Date.now()): void {
  db.prepare(
    `INSERT INTO worktrees (task_id, repo, path, branch, base_ref, base_commit, state, owner_pid, owner_start, attempt, created_at, copy_of)
     VALUES (?, ?, ?, ?, ?, ?, 'allocating', ?, ?, ?, ?, ?)
     ON CONFLICT(task_id) DO UPDATE SET repo = excluded.repo, path = excluded.path, branch = excluded.branch,
       base_ref = excluded.base_ref, base_commit = excluded.base_commit, state = 'allocating', owner_pid = excluded.owner_pid,
       owner_start = excluded.owner_start, attempt = excluded.attempt, created_at = excluded.created_at, copy_of = excluded.copy_of, head_commit = NULL,
       verified_commit = NULL, verify_ok = NULL, ready_at = NULL, released_at = NULL, release_reason = NULL`,
  ).run(a.taskId, a.repo, a.path, a.branch, a.baseRef, a.baseCommit, a.ownerPid, a.ownerStart, a.attempt, now, a.copyOf ?? null);
}

/** Phase 2: the worktree exists on disk (a copy learns its base commit only now). Returns false when the row was not in `allocating` (swept meanwhile). */
export function markReady(db: Db, taskId: string, now = Date.now(), baseCommit?: string): boolean {
  return (
    db
      .prepare(`UPDATE worktrees SET state = 'ready', ready_at = ?, base_commit = COALESCE(?, base_commit) WHERE task_id = ? AND state = 'allocating'`)
      .run(now, baseCommit ?? null, taskId).changes === 1
  );
}

export function markReleased(db: Db, taskId: string, reason: string, now = Date.now()): void {
  db.prepare(`UPDATE worktrees SET state = 'released', released_at = ?, release_reason = ? WHERE task_id = ?`).run(now, reason, taskId);
}

export function setHeadCommit(db: Db, taskId: string, commit: string): void {
  db.prepare('UPDATE worktrees SET head_commit = ?, verify_ok = NULL, verified_commit = NULL WHERE task_id = ?').run(commit, taskId);
}

export function setVerifyOutcome(db: Db, taskId: string, ok: boolean, commit: string | null): void {
  db.prepare('UPDATE worktrees SET verify_ok = ?, verified_commit = ? WHERE task_id = ?').run(ok ? 1 : 0, commit, taskId);
}
