import type { Migration } from './index.js';

/**
 * `client_requests`: a caller's request id (an MCP host retrying `delegate_task` after a dropped
 * connection, a script re-running `submit`) and the tasks its first call created, so the same id returns
 * those tasks instead of creating them twice. `fields` holds a hash per input field (never the input
 * itself, which may carry secrets), enough to name the field a reused id changed.
 */
export const m009ClientRequests: Migration = {
  name: '009-client-requests',
  up(db) {
    db.exec(`
      CREATE TABLE client_requests (
        id         TEXT PRIMARY KEY,
        command    TEXT NOT NULL,
        fields     TEXT NOT NULL,
        task_ids   TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL
      );
    `);
  },
};
