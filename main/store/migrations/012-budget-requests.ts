import type { Migration } from './index.js';

/**
 * A request may also be a budget one: a task that reached its token, cost, turn or wall-time budget waits
 * for a person to raise it (`allow`) or stop it (`deny`). SQLite cannot change a CHECK constraint in place,
 * so the table is rebuilt with the same columns and indexes (nothing references it).
 */
export const m012BudgetRequests: Migration = {
  name: '012-budget-requests',
  up(db) {
    db.exec(`
      CREATE TABLE requests_new (
        id           TEXT PRIMARY KEY,
        task_id      TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        attempt      INTEGER NOT NULL,
        kind         TEXT NOT NULL CHECK (kind IN ('permission', 'question', 'budget')),
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
      INSERT INTO requests_new SELECT id, task_id, attempt, kind, status, worker, session_id, question, tool, command, scope, reason, options,
        decision, answer, remember, answered_by, created_at, expires_at, answered_at FROM requests;
      DROP TABLE requests;
      ALTER TABLE requests_new RENAME TO requests;
      CREATE INDEX requests_task ON requests(task_id, created_at);
      CREATE INDEX requests_pending ON requests(status, expires_at) WHERE status = 'pending';
    `);
  },
};
