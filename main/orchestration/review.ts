import { AppError } from '../core/errors.js';
import { createTasks, type CreateContext } from '../tasks/create.js';
import type { ParsedTaskInput } from '../tasks/schema.js';
import type { Task } from '../tasks/types.js';

/** The read-only review task that checks one execute task's change ("review chains"). */
export function reviewInput(exec: Task, reviewer: string, extra: { objective?: string; priority?: number } = {}): ParsedTaskInput {
  const lines = [
    `Review the change made by LightWorker task ${exec.id} ("${exec.name}") on worker ${exec.worker}.`,
    `Its objective was:\n${exec.objective}`,
    `The change is on branch lightworker/${exec.id} (compare it with ${exec.baseRef ?? 'the base commit'}, e.g. \`git diff ${exec.baseRef ?? 'HEAD'}...lightworker/${exec.id}\`).`,
    'Do not change any file. Report correctness problems, missed requirements and risky edits, most serious first, and say whether you would accept it.',
  ];
  if (extra.objective) lines.push(`Also: ${extra.objective}`);
  return {
    kind: 'review',
    name: `review of ${exec.name}`.slice(0, 200),
    objective: lines.join('\n\n'),
    workspace: exec.workspace,
    worker: reviewer,
    mode: exec.mode,
    priority: extra.priority ?? exec.priority,
    context_pack: exec.contextPack ?? undefined,
    depends_on: [exec.id],
    parent_id: exec.id,
    metadata: { review_of: exec.id },
  };
}

/**
 * Insert review tasks for already-inserted execute tasks, in the caller's transaction. The reviewer
 * must be another worker than the one whose change it reviews.
 */
export function chainReviews(ctx: CreateContext, execs: Task[], reviewer: string, field = 'review_by'): Task[] {
  for (const e of execs) {
    if (e.kind !== 'execute') throw new AppError('invalid_input', `${field}: only execute tasks get a review (task ${e.id} is ${e.kind})`, { field });
    if (e.worker === reviewer) throw new AppError('invalid_input', `${field}: "${reviewer}" would review its own change; pick another worker`, { field });
  }
  return execs.map((e) => createTasks(ctx, [reviewInput(e, reviewer)])[0]);
}
