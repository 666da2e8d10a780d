import type { Migration } from './index.js';

/**
 * For a fleet: the same schema as PostgreSQL's (store/pg/schema.ts):
 * - events chain per task (`chain` = task id, '' for events of no task; `chain_pos` from 1) with the
 *   heads in `chain_heads`, tied together periodically by `anchors`, so writers on many hosts never wait
 *   for one global row. Rows written before this migration keep their one global chain (`audit_head`,
 *   frozen here) and are verified as before;
 * - `runners`: every runner of a fleet, its host, repositories and lease;
 * - `tasks.repo_key`: the repository's stable identity in a fleet (a configured name or remote URL), and
 *   `tasks.origin_host`: the host it was submitted on (where its workspace path means something).
 */
export const m008FleetChains: Migration = {
  name: '008-fleet-chains',
  up(db) {
    db.exec(`
      ALTER TABLE events ADD COLUMN chain TEXT;
      ALTER TABLE events ADD COLUMN chain_pos INTEGER;
      CREATE UNIQUE INDEX events_chain ON events(chain, chain_pos) WHERE chain IS NOT NULL;
      CREATE TABLE chain_heads (
        chain        TEXT PRIMARY KEY,
        pos          INTEGER NOT NULL,
        seq          INTEGER NOT NULL,
        hash         TEXT NOT NULL,
        anchored_pos INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE anchors (
        id        INTEGER PRIMARY KEY,
        ts        INTEGER NOT NULL,
        heads     TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL
      );
      CREATE TABLE runners (
        id           TEXT PRIMARY KEY,
        host         TEXT NOT NULL,
        pid          INTEGER NOT NULL,
        pid_start    TEXT,
        repos        TEXT NOT NULL DEFAULT '{}',
        slots        INTEGER NOT NULL,
        state        TEXT NOT NULL CHECK (state IN ('active', 'stopped', 'lost')),
        started_at   INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL,
        ended_at     INTEGER
      );
      CREATE INDEX runners_state ON runners(state, expires_at);
      ALTER TABLE tasks ADD COLUMN repo_key TEXT;
      ALTER TABLE tasks ADD COLUMN origin_host TEXT;
      CREATE INDEX tasks_runner ON tasks(runner_id) WHERE status IN ('starting', 'running', 'verifying');
    `);
  },
};
