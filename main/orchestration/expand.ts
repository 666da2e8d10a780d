import type { Config } from '../core/config.js';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import { AppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { appendEvent } from '../store/events.js';
import { createTasks } from '../tasks/create.js';
import type { ParsedTaskInput } from '../tasks/schema.js';
import type { Task } from '../tasks/types.js';
import { planResultSchema, type PlanResult } from '../tasks/contract/plan-schema.js';
import { planChildrenCount } from '../store/teams.js';

/**
 * Turn a completed planner task's JSON result into its children, all or nothing.
 *
 * Validates the result (shape, ≤ 12 tasks, unique ids, known dependencies, no cycles, kinds, profiles)
 * and inserts the children with `parent_id` = the planner, inheriting its workspace, base ref, mode,
 * context pack and root; `depends_on` ids of the plan become task dependencies. Runs in the caller's
 * transaction when there is one (a savepoint), else in its own; on any error nothing is inserted and an
 * `invalid_input` AppError names the bad field (`result.tasks[2].depends_on`). Call it once per planner
 * attempt: a planner that already has plan children is refused with `conflict`.
 */
export function expandPlan(db: Db, config: Config, homeRoot: string, planTask: Task, result: unknown): Task[] {
  if (planTask.kind !== 'plan') throw new AppError('invalid_input', `task ${planTask.id} is a ${planTask.kind} task, not a plan`);
  const plan = parsePlan(result);
  checkGraph(plan);
  return db.transaction(() => {
    const existing = planChildrenCount(db, planTask.id);
    if (existing > 0) throw new AppError('conflict', `plan of task ${planTask.id} was already expanded into ${existing} tasks`);
    const inputs: ParsedTaskInput[] = plan.tasks.map((t) => ({
      ref: t.id,
      name: t.title,
      kind: t.kind,
      objective: t.objective,
      workspace: planTask.workspace,
      base_ref: planTask.baseRef ?? undefined,
      mode: planTask.mode,
      profile: t.profile ?? undefined,
      success_criteria: t.success_criteria,
      verify: t.verify,
      context_pack: planTask.contextPack ?? undefined,
      depends_on: t.depends_on,
      parent_id: planTask.id,
      metadata: { plan: { planner: planTask.id, id: t.id } },
    }));
    let children: Task[];
    try {
      // The children take the planner's mode, settled (and lowered for an agent) when it was created.
      children = createTasks({ db, config, homeRoot, depth: planTask.depth, authority: 'engine', cachelab: taskCachelab }, inputs);
    } catch (e) {
      // createTasks names fields `tasks[i].x`; say they came from the planner's result.
      if (e instanceof AppError && e.code === 'invalid_input') throw new AppError('invalid_input', `result.${e.message}`, e.details);
      throw e;
    }
    appendEvent(db, planTask.id, 'plan.expanded', { summary: plan.summary.slice(0, 2000), tasks: children.map((c, i) => ({ id: c.id, ref: plan.tasks[i].id })) });
    return children;
  }).immediate();
}

/** Shape check of a planner result (a JSON string is parsed first). */
export function parsePlan(result: unknown): PlanResult {
  let value = result;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw new AppError('invalid_input', 'result: the planner did not return JSON', { field: 'result' });
    }
  }
  const parsed = planResultSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
    throw new AppError('invalid_input', `result${path}: ${issue.message}${keys}`, { field: `result${path}` });
  }
  return parsed.data;
}

/** Unique ids, dependencies inside the plan, no self-loops or cycles: reported before anything is written. */
function checkGraph(plan: PlanResult): void {
  const index = new Map<string, number>();
  plan.tasks.forEach((t, i) => {
    if (index.has(t.id)) throw new AppError('invalid_input', `result.tasks[${i}].id: duplicate id "${t.id}"`, { field: `result.tasks[${i}].id` });
    index.set(t.id, i);
  });
  plan.tasks.forEach((t, i) => {
    const field = `result.tasks[${i}].depends_on`;
    if (new Set(t.depends_on).size !== t.depends_on.length) throw new AppError('invalid_input', `${field}: lists a dependency twice`, { field });
    for (const d of t.depends_on) {
      if (d === t.id) throw new AppError('invalid_input', `${field}: task "${t.id}" depends on itself`, { field });
      if (!index.has(d)) throw new AppError('invalid_input', `${field}: unknown plan task "${d}"`, { field, value: d });
    }
  });
  // Kahn's algorithm: whatever is left over sits on a cycle.
  const indeg = plan.tasks.map((t) => t.depends_on.length);
  const queue = plan.tasks.flatMap((_, i) => (indeg[i] === 0 ? [i] : []));
  let seen = 0;
  while (queue.length) {
    const i = queue.shift()!;
    seen++;
    plan.tasks.forEach((t, k) => {
      if (t.depends_on.includes(plan.tasks[i].id) && --indeg[k] === 0) queue.push(k);
    });
  }
  if (seen < plan.tasks.length) {
    const cycle = plan.tasks.filter((_, i) => indeg[i] > 0).map((t) => t.id);
    throw new AppError('invalid_input', `result.tasks: dependency cycle among ${cycle.join(', ')}`, { field: 'result.tasks', cycle });
  }
}
