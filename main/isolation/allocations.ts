import type { Db } from '../store/db.js';

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

/* ---- Read-only snapshots (migration 005): the same ledger, one row per pooled snapshot. ---- */

export type SnapshotState = 'allocating' | 'in_use' | 'free';

export interface SnapshotRow {
  id: string;
  repo: string;
  path: string;
  /** The source state it holds (HEAD + uncommitted changes as one commit); null while allocating. */
  stateCommit: string | null;
  state: SnapshotState;
  taskId: string | null;
  ownerPid: number;
  ownerStart: string | null;
  /** Fingerprint of its git dir as LightWorker left it (config, HEAD file, hooks): a changed one is never reused. */
  gitHash: string | null;
  uses: number;
  createdAt: number;
  usedAt: number;
}

interface RawSnapshot {
  id: string;
  repo: string;
  path: string;
  state_commit: string | null;
  state: SnapshotState;
  task_id: string | null;
  owner_pid: number;
  owner_start: string | null;
  git_hash: string | null;
  uses: number;
  created_at: number;
  used_at: number;
}

function toSnapshot(r: RawSnapshot): SnapshotRow {
  return {
    id: r.id,
    repo: r.repo,
    path: r.path,
    stateCommit: r.state_commit,
    state: r.state,
    taskId: r.task_id,
    ownerPid: r.owner_pid,
    ownerStart: r.owner_start,
    gitHash: r.git_hash,
    uses: r.uses,
    createdAt: r.created_at,
    usedAt: r.used_at,
  };
}

/**
 * Snapshot rows, newest use first. `under`: only those whose path lies there (a fleet's store holds every
 * host's snapshots; a host sees and sweeps only its own home's).
 */
export function listSnapshots(db: Db, repo?: string, under?: string): SnapshotRow[] {
  const rows = repo
    ? (db.prepare('SELECT * FROM snapshots WHERE repo = ? ORDER BY used_at DESC').all(repo) as RawSnapshot[])
    : (db.prepare('SELECT * FROM snapshots ORDER BY used_at DESC').all() as RawSnapshot[]);
  return rows.filter((r) => under === undefined || r.path.startsWith(under)).map(toSnapshot);
}

export function getSnapshot(db: Db, id: string): SnapshotRow | null {
  const r = db.prepare('SELECT * FROM snapshots WHERE id = ?').get(id) as RawSnapshot | undefined;
  return r ? toSnapshot(r) : null;
}

/**
 * Take a free snapshot of `repo` for `taskId` (call inside a write transaction): one already holding
 * `stateCommit` if any, else the least recently used free one (it will be moved to the new state).
 */
export function claimFreeSnapshot(db: Db, repo: string, stateCommit: string, taskId: string, owner: { pid: number; start: string | null }, now = Date.now(), under = ''): SnapshotRow | null {
  // `under`: this home's snapshot folder (in a fleet, another host's snapshot of the same path is not here).
  const exact = db.prepare(`SELECT * FROM snapshots WHERE repo = ? AND state = 'free' AND state_commit = ? AND substr(path, 1, ?) = ? LIMIT 1`).get(repo, stateCommit, under.length, under) as RawSnapshot | undefined;
  const any = exact ?? (db.prepare(`SELECT * FROM snapshots WHERE repo = ? AND state = 'free' AND substr(path, 1, ?) = ? ORDER BY used_at ASC LIMIT 1`).get(repo, under.length, under) as RawSnapshot | undefined);
  if (!any) return null;
  db.prepare(`UPDATE snapshots SET state = 'in_use', task_id = ?, owner_pid = ?, owner_start = ?, uses = uses + 1, used_at = ? WHERE id = ? AND state = 'free'`).run(
    taskId,
    owner.pid,
    owner.start,
    now,
    any.id,
  );
  return getSnapshot(db, any.id);
}

/** Phase 1 of a new snapshot: the named row, before anything touches disk. */
export function insertSnapshot(db: Db, s: Pick<SnapshotRow, 'id' | 'repo' | 'path' | 'taskId' | 'ownerPid' | 'ownerStart'>, now = Date.now()): void {
  db.prepare(
    `INSERT INTO snapshots (id, repo, path, state, task_id, owner_pid, owner_start, uses, created_at, used_at) VALUES (?, ?, ?, 'allocating', ?, ?, ?, 1, ?, ?)`,
  ).run(s.id, s.repo, s.path, s.taskId, s.ownerPid, s.ownerStart, now, now);
}

/** The snapshot now holds `stateCommit` on disk and is used by its task. */
export function markSnapshotInUse(db: Db, id: string, stateCommit: string, gitHash: string): void {
  db.prepare(`UPDATE snapshots SET state = 'in_use', state_commit = ?, git_hash = ? WHERE id = ?`).run(stateCommit, gitHash, id);
}

/** Back in the pool, clean, holding `stateCommit`. */
export function markSnapshotFree(db: Db, id: string, now = Date.now()): void {
  db.prepare(`UPDATE snapshots SET state = 'free', task_id = NULL, used_at = ? WHERE id = ?`).run(now, id);
}

export function deleteSnapshotRow(db: Db, id: string): void {
  db.prepare('DELETE FROM snapshots WHERE id = ?').run(id);
}
