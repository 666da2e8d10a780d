import type { Migration } from './index.js';

/**
 * The ready set, so a dispatch pass does not scan every queued task: `deps_pending` counts a task's dependencies that have not completed (or been
 * accepted), kept exact by triggers on every status change and dependency row, whoever writes them; a
 * partial index holds exactly the queued tasks with none pending, in dispatch order. A dispatch pass
 * then reads the ready tasks alone, however many wait behind an approval (before: every queued row
 * with a dependency subquery, per pass).
 */
const DONE = `('completed', 'accepted')`;

export const m007ReadySet: Migration = {
  name: '007-ready-set',
  up(db) {
    db.exec(`
      ALTER TABLE tasks ADD COLUMN deps_pending INTEGER NOT NULL DEFAULT 0;
      UPDATE tasks SET deps_pending = (
        SELECT COUNT(*) FROM task_deps d LEFT JOIN tasks p ON p.id = d.depends_on
        WHERE d.task_id = tasks.id AND COALESCE(p.status, '') NOT IN ${DONE});
      CREATE INDEX tasks_ready ON tasks(priority DESC, id) WHERE status = 'queued' AND deps_pending = 0;

      -- A dependency row counts while its task is not done (a task not inserted yet counts too).
      CREATE TRIGGER task_deps_pending_add AFTER INSERT ON task_deps
      WHEN COALESCE((SELECT status FROM tasks WHERE id = NEW.depends_on), '') NOT IN ${DONE}
      BEGIN
        UPDATE tasks SET deps_pending = deps_pending + 1 WHERE id = NEW.task_id;
      END;
      CREATE TRIGGER task_deps_pending_remove AFTER DELETE ON task_deps
      WHEN COALESCE((SELECT status FROM tasks WHERE id = OLD.depends_on), '') NOT IN ${DONE}
      BEGIN
        UPDATE tasks SET deps_pending = deps_pending - 1 WHERE id = OLD.task_id;
      END;
      -- A task becoming done (or, never today, leaving done) moves every dependent's count.
      CREATE TRIGGER tasks_deps_pending_status AFTER UPDATE OF status ON tasks
      WHEN (NEW.status IN ${DONE}) <> (OLD.status IN ${DONE})
      BEGIN
        UPDATE tasks SET deps_pending = deps_pending + (CASE WHEN NEW.status IN ${DONE} THEN -1 ELSE 1 END)
        WHERE id IN (SELECT task_id FROM task_deps WHERE depends_on = NEW.id);
      END;
    `);
  },
};
