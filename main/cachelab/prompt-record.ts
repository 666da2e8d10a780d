import type { StoreReader } from '../store/engine-handle.js';
import { appendEvent } from '../store/events.js';
import type { Task } from '../tasks/types.js';
import { assignCohort } from './cohort.js';
import { promptEventPayload, type BuiltPrompt } from './prompt.js';

/**
 * Record a first-turn prompt as a `worker.prompt` event (hashes and byte counts only) and refresh
 * the task's cohort — a retry may have changed its gateway, effort or model since creation. The
 * event's cohort and model are what the usage samples of this attempt are attributed to. Run inside
 * a write transaction.
 */
export function recordPrompt(engine: StoreReader, task: Task, prompt: BuiltPrompt, turn: { model: string | null; sandbox: string }): number {
  const cohort = assignCohort(engine.db, engine.config, task);
  return appendEvent(engine.db, task.id, 'worker.prompt', promptEventPayload(prompt, { cohort, model: turn.model, sandbox: turn.sandbox, attempt: task.attempt }));
}
