import type { Migration } from './index.js';

/**
 * Read-only snapshots and copy isolation.
 * - `snapshots`: disposable checkouts (HEAD + the user's uncommitted and untracked changes) where a
 *   read-only task of a worker without an enforced sandbox runs. Pooled per repository and reused per
 *   source state (`state_commit`: a commit of that state, deterministic for the same tree and HEAD).
 *   Two-phase like worktrees: a row in `allocating` exists before anything touches disk; a row whose
 *   owner died (allocating or in_use) is swept by takeover and prune.
 * - `worktrees.copy_of`: the plain folder (not a git repository) a private git copy was made of; such an
 *   allocation's `repo` and `path` are the copy itself.
 */
export const m006Snapshots: Migration = {
  name: '006-snapshots',
  up(db) {
    db.exec(`
      CREATE TABLE snapshots (
        id           TEXT PRIMARY KEY,
        repo         TEXT NOT NULL,
        path         TEXT NOT NULL UNIQUE,
        state_commit TEXT,
        state        TEXT NOT NULL CHECK (state IN ('allocating','in_use','free')),
        task_id      TEXT,
        owner_pid    INTEGER NOT NULL,
        owner_start  TEXT,
        git_hash     TEXT,
        uses         INTEGER NOT NULL DEFAULT 0,
        created_at   INTEGER NOT NULL,
        used_at      INTEGER NOT NULL
      );
      CREATE INDEX snapshots_repo ON snapshots(repo, state, state_commit);

      ALTER TABLE worktrees ADD COLUMN copy_of TEXT;
    `);
  },
};
