import { AppError } from '../core/errors.js';
import type { StoreReader, StoreWriter } from '../store/engine-handle.js';
import type { Task } from '../tasks/types.js';

/** Called in the completing transaction when a plan task ends with a valid plan (orchestration expands it). */
export type PlanHandler = (engine: StoreReader, task: Task, result: unknown) => void;

/**
 * Teams: `onEnded` after any task reached an end (at once when this process ran it, else from the
 * task.status event once the ending transaction committed; idempotent, so both may call it), `onStart`
 * when this process starts leading (unfinished teams).
 */
export interface TeamHandler {
  onEnded(engine: StoreWriter, taskId: string): void;
  onStart(engine: StoreWriter): void;
  /** What a member task reads of the team's steps before it (given to its run), or null outside a team. */
  inputsFor(engine: StoreReader, task: Task): Promise<string | null>;
}

/**
 * What a leader does besides running tasks: expand plans and move teams on. Both are required: a leader
 * without them would run a planner and never create its children. main/app.ts passes orchestration's.
 */
export interface LeaderHooks {
  readonly plan: PlanHandler;
  readonly team: TeamHandler;
}

/** The hooks, checked: a caller from plain JavaScript that left one out gets an error, not a leader that half works. */
export function requireLeaderHooks(hooks: LeaderHooks | undefined): LeaderHooks {
  const missing = [
    typeof hooks?.plan !== 'function' && 'plan',
    (typeof hooks?.team?.onEnded !== 'function' || typeof hooks.team.onStart !== 'function' || typeof hooks.team.inputsFor !== 'function') && 'team',
  ].filter(Boolean);
  if (missing.length) throw new AppError('invalid_input', `a leader needs its ${missing.join(' and ')} hook${missing.length > 1 ? 's' : ''} (build it through main/app.ts)`, { field: 'hooks' });
  return hooks!;
}
