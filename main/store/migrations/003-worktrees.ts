import type { Migration } from './index.js';

/**
 * Worktree allocations (two-phase: a row in `allocating` is written before anything touches disk, so a
 * crash leaves a named record that prune sweeps) and the port block ledger (no two live worktrees share
 * ports). Verification outcome is kept on the allocation so accept can check what was verified.
 */
export const m003Worktrees: Migration = {
  name: '003-worktrees',
  up(db) {
    db.exec(`
      CREATE TABLE worktrees (
        task_id         TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
        repo            TEXT NOT NULL,
        path            TEXT NOT NULL UNIQUE,
        branch          TEXT NOT NULL,
        base_ref        TEXT NOT NULL,
        base_commit     TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('allocating','ready','released')),
        owner_pid       INTEGER NOT NULL,
        owner_start     TEXT,
        head_commit     TEXT,
        verified_commit TEXT,
        verify_ok       INTEGER,
        attempt         INTEGER NOT NULL DEFAULT 1,
        created_at      INTEGER NOT NULL,
        ready_at        INTEGER,
        released_at     INTEGER,
        release_reason  TEXT
      );
      CREATE INDEX worktrees_state ON worktrees(state, repo);

      CREATE TABLE port_blocks (
        base         INTEGER PRIMARY KEY,
        size         INTEGER NOT NULL,
        task_id      TEXT NOT NULL UNIQUE REFERENCES tasks(id) ON DELETE CASCADE,
        allocated_at INTEGER NOT NULL
      );
    `);
  },
};
