import { taskCachelab } from '../cachelab/task-cachelab.js';
import type { StoreReader } from '../store/engine-handle.js';
import type { TeamHandler } from '../scheduler/leader-hooks.js';
import { teamMemberDepth } from '../store/tasks.js';
import { appendEvent } from '../store/events.js';
import type { CreateContext } from '../tasks/create.js';
import { advanceAllTeams, advanceTeam } from './team-driver.js';
import { teamInputsFor } from './team-inputs.js';

function contextOf(engine: StoreReader, depth: number): CreateContext {
  return { db: engine.db, config: engine.config, homeRoot: engine.home.root, depth, authority: 'engine', cachelab: taskCachelab };
}

/**
 * Orchestration's team hook for a leader (main/app.ts passes it): the leading process moves a team on
 * after each of its tasks ends and, when it starts leading, every team left unfinished (a team is
 * resumable). A step that fails is recorded as a `team.error` event on the task and never stops the
 * scheduler.
 */
export const teamHook: TeamHandler = {
  onEnded(engine, taskId) {
    // Called for every task's end on the leader's hot path: most tasks are in no team.
    const depth = teamMemberDepth(engine.db, taskId);
    if (depth === null) return;
    try {
      engine.write(() => advanceTeam(contextOf(engine, depth), taskId));
    } catch (e) {
      engine.write(() => appendEvent(engine.db, taskId, 'team.error', { message: (e as Error).message.slice(0, 2000) }));
    }
  },
  inputsFor: teamInputsFor,
  onStart(engine) {
    try {
      engine.write(() => advanceAllTeams(contextOf(engine, 0)));
    } catch (e) {
      process.stderr.write(`lightworker: moving unfinished teams on failed: ${(e as Error).message}\n`);
    }
  },
};
