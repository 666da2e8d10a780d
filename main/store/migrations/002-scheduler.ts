import type { Migration } from './index.js';

export const m002Scheduler: Migration = {
  name: '002-scheduler',
  up(db) {
    db.exec(`
      -- Tasks a runner owns, for recovery on takeover and the per-root/per-repo limit counts.
      CREATE INDEX tasks_active ON tasks(status, root_id, workspace) WHERE status IN ('starting', 'running', 'verifying');
      CREATE INDEX attempts_runner ON attempts(runner_id, status);
    `);
  },
};
