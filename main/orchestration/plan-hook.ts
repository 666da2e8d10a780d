import type { PlanHandler } from '../scheduler/leader-hooks.js';
import { expandPlan } from './expand.js';

/**
 * Orchestration's plan hook for a leader (main/app.ts passes it): when a `plan` task completes with a
 * schema-valid result, the scheduler calls this inside the completing transaction, so children appear
 * atomically with the planner's `completed`; an invalid plan (cycle, unknown dependency, > 12 tasks…)
 * throws an `invalid_input` AppError, the transaction rolls back and the runner records the planner as
 * failed with that message — nothing of the plan is inserted.
 */
export const planHook: PlanHandler = (engine, task, result) => {
  expandPlan(engine.db, engine.config, engine.home.root, task, result);
};
