import type { Migration } from './index.js';

/**
 * Human in the loop: `requests` holds what a running worker asked a person (a permission or
 * a question), who answered and how; `sealed_texts` holds the caller's original text of a follow-up
 * message or an answer when redaction changed it (AES-GCM with the home key, like task_secrets), so the
 * worker gets the real text while events and rows keep the redacted one.
 */
export const m005Requests: Migration = {
  name: '005-requests',
  up(db) {
    db.exec(`
      CREATE TABLE requests (
        id           TEXT PRIMARY KEY,
        task_id      TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        attempt      INTEGER NOT NULL,
        kind         TEXT NOT NULL CHECK (kind IN ('permission', 'question')),
        status       TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'expired', 'cancelled')),
        worker       TEXT NOT NULL,
        session_id   TEXT,
        question     TEXT NOT NULL,
        tool         TEXT,
        command      TEXT,
        scope        TEXT,
        reason       TEXT,
        options      TEXT NOT NULL DEFAULT '[]',
        decision     TEXT CHECK (decision IN ('allow', 'deny', 'answer')),
        answer       TEXT,
        remember     INTEGER NOT NULL DEFAULT 0,
        answered_by  TEXT,
        created_at   INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL,
        answered_at  INTEGER
      );
      CREATE INDEX requests_task ON requests(task_id, created_at);
      CREATE INDEX requests_pending ON requests(status, expires_at) WHERE status = 'pending';

      CREATE TABLE sealed_texts (
        task_id     TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        key         TEXT NOT NULL,
        ciphertext  BLOB NOT NULL,
        PRIMARY KEY (task_id, key)
      );
    `);
  },
};
