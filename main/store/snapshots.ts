import type { Db } from './db.js';

/** Query module for the `snapshots` table (migration 006): read-only snapshots, one row per pooled snapshot. */

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

/** Is there a snapshot row for this folder (a folder without one is an orphan)? */
export function isSnapshotRecorded(db: Db, path: string): boolean {
  return db.prepare('SELECT 1 FROM snapshots WHERE path = ?').get(path) !== undefined;
}
