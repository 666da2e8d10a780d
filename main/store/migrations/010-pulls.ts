import type { Migration } from './index.js';

/**
 * Pull (merge) requests opened from tasks: one row per task and remote branch, the forge's number and URL,
 * what the watcher last saw (state, checks, review) and when it looks again. Tokens are never stored: the
 * row names where the credential comes from (`token_source`), not its value. The same table as PostgreSQL's
 * (store/pg/schema.ts).
 */
export const m010Pulls: Migration = {
  name: '010-pulls',
  up(db) {
    db.exec(`
      CREATE TABLE pulls (
        task_id        TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
        forge          TEXT NOT NULL,
        kind           TEXT NOT NULL CHECK (kind IN ('github', 'gitlab', 'gitea')),
        api_url        TEXT NOT NULL,
        repo           TEXT NOT NULL,
        remote_url     TEXT NOT NULL,
        token_source   TEXT NOT NULL,
        number         INTEGER NOT NULL,
        url            TEXT NOT NULL,
        branch         TEXT NOT NULL,
        base           TEXT NOT NULL,
        draft          INTEGER NOT NULL DEFAULT 1,
        state          TEXT NOT NULL CHECK (state IN ('open', 'merged', 'closed')),
        checks         TEXT NOT NULL DEFAULT 'none' CHECK (checks IN ('none', 'pending', 'passing', 'failing')),
        review         TEXT NOT NULL DEFAULT 'none' CHECK (review IN ('none', 'commented', 'changes_requested', 'approved')),
        head_sha       TEXT NOT NULL,
        fix_rounds     INTEGER NOT NULL DEFAULT 0,
        fixing         INTEGER NOT NULL DEFAULT 0,
        seen_comments  TEXT NOT NULL DEFAULT '[]',
        sent_failure   TEXT,
        poll_every_ms  INTEGER NOT NULL,
        next_poll_at   INTEGER NOT NULL,
        last_error     TEXT,
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER NOT NULL
      );
      CREATE INDEX pulls_due ON pulls(next_poll_at) WHERE state = 'open';
    `);
  },
};
