import type { Migration } from './index.js';

/**
 * `usage_samples(task_id)`: deleting a task (gc of an ended tree) cascades to its usage samples, and
 * without an index each deleted task scanned the whole table. The same index as PostgreSQL's
 * (store/pg/schema.ts, 004).
 */
export const m011UsageTaskIndex: Migration = {
  name: '011-usage-task-index',
  up(db) {
    db.exec('CREATE INDEX IF NOT EXISTS usage_samples_task ON usage_samples(task_id)');
  },
};
