import type { Migration } from './index.js';

/**
 * Cache Lab: the cache cohort of each task (set at creation), one usage sample per
 * `worker.usage` event (UNIQUE event_seq makes materialization idempotent), and context packs
 * (explicit, versioned reference text; the hash covers name + version + canonical text).
 */
export const m004Cachelab: Migration = {
  name: '004-cachelab',
  up(db) {
    db.exec(`
      ALTER TABLE tasks ADD COLUMN cohort TEXT;
      CREATE INDEX tasks_cohort ON tasks(cohort);

      CREATE TABLE usage_samples (
        event_seq      INTEGER PRIMARY KEY,
        task_id        TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        attempt        INTEGER NOT NULL,
        worker         TEXT NOT NULL,
        cohort         TEXT,
        ts             INTEGER NOT NULL,
        input_tokens   INTEGER NOT NULL,
        cached_tokens  INTEGER NOT NULL,
        output_tokens  INTEGER NOT NULL,
        routed_model   TEXT,
        reported_model TEXT,
        route          TEXT NOT NULL CHECK (route IN ('verified','not_exposed','mismatch','missing','legacy'))
      );
      CREATE INDEX usage_samples_ts ON usage_samples(ts);
      CREATE INDEX usage_samples_cohort ON usage_samples(cohort, ts);

      CREATE TABLE context_packs (
        hash       TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        version    TEXT NOT NULL,
        text       TEXT NOT NULL,
        bytes      INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (name, version)
      );
    `);
  },
};
