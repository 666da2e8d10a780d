import { z } from 'zod';
import { EFFORTS, MODES } from '../core/config.js';
import { isAppError } from '../core/errors.js';
import { createComparison, compareReport } from '../orchestration/compare.js';
import { chainReviews } from '../orchestration/review.js';
import { createTasks } from '../tasks/create.js';
import { MAX_OBJECTIVE_BYTES, noNul, TASK_ID, taskInputSchema } from '../tasks/schema.js';
import { rootBudgetSchema } from '../tasks/budget.js';
import { CLIENT_REQUEST_ID, createOnce } from './client-request.js';
import { createContext, presentTask, withApproval } from './tasks.js';
import { getTaskDiff } from './isolation.js';
import { defineCommand, inputError, runCommand, type CommandContext, type CommandDef } from './table.js';
import { MAX_MEMBERS, MAX_ROUNDS, teamInputSchema } from '../orchestration/team-schema.js';
import { createTeam } from '../orchestration/teams.js';

/** The one command a comparison report runs for each candidate (the same validation as every face). */
const DIFF_TABLE: ReadonlyMap<string, CommandDef> = new Map([getTaskDiff as CommandDef].map((c) => [c.name, c]));

const WORKER = z.string().min(1).max(64).regex(/^[a-z0-9][a-z0-9_-]*$/, 'a worker name');


export const orchestrateGoal = defineCommand({
  name: 'orchestrate_goal',
  description: 'A planner splits a goal into up to 12 tasks (a DAG).',
  input: z.strictObject({
    goal: noNul(z.string().min(1, 'goal must not be empty')).refine((s) => Buffer.byteLength(s) <= MAX_OBJECTIVE_BYTES, `goal is larger than ${MAX_OBJECTIVE_BYTES} bytes`),
    workspace: noNul(z.string().min(1).max(4096)),
    mode: z.enum(MODES).optional(),
    worker: WORKER.optional().describe("the planner's"),
    reasoning_effort: z.enum(EFFORTS).optional(),
    context_pack: z.string().min(1).max(128).optional(),
    base_ref: z.string().min(1).max(256).optional(),
    priority: z.number().int().min(0).max(100).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    budget: rootBudgetSchema.optional(),
    client_request_id: CLIENT_REQUEST_ID.optional(),
    // Instead of a planner: a team strategy on the goal (lightworker team …; start_team has every option).
    team: z
      .strictObject({
        strategy: z.enum(['implement_review', 'map_reduce', 'best_of_n']),
        workers: z.array(z.string()).min(1).max(MAX_MEMBERS),
        rounds: z.number().int().min(1).max(MAX_ROUNDS).optional(),
      })
      .optional(),
  }),
  readOnly: false,
  handler(ctx, input) {
    if (input.team) return startTeamForGoal(ctx, input, input.team);
    const c = createContext(ctx);
    const { tasks, replayed } = createOnce(ctx, 'orchestrate_goal', input, () =>
      createTasks(c, [
        {
          kind: 'plan',
          profile: 'planner',
          name: `plan: ${input.goal.trim().split('\n')[0]}`.slice(0, 200),
          objective: input.goal,
          workspace: input.workspace,
          mode: input.mode,
          worker: input.worker,
          reasoning_effort: input.reasoning_effort,
          context_pack: input.context_pack,
          base_ref: input.base_ref,
          priority: input.priority,
          metadata: { ...(input.metadata ?? {}), orchestrate: true },
          budget: input.budget,
        },
      ]),
    );
    // The plan's children inherit its mode: execute tasks of an agent's plan wait for a person.
    return { task: presentTask(ctx, tasks[0]), ...withApproval(ctx, tasks, c.lowered), ...(replayed ? { replayed: true as const } : {}) };
  },
});

/** orchestrate_goal with `team`: the goal becomes the team's objective, validated by start_team's schema. */
function startTeamForGoal(ctx: CommandContext, input: { goal: string; team?: unknown; worker?: string; client_request_id?: string }, team: Record<string, unknown>) {
  const { goal, team: _t, worker: _w, client_request_id: _id, ...shared } = input;
  const parsed = teamInputSchema.safeParse(Object.fromEntries(Object.entries({ ...shared, ...team, objective: goal }).filter(([, v]) => v !== undefined)));
  if (!parsed.success) throw inputError(parsed.error, 'orchestrate_goal.team');
  const c = createContext(ctx);
  const { tasks, replayed } = createOnce(ctx, 'orchestrate_goal', input, () => createTeam(c, parsed.data));
  return {
    task: presentTask(ctx, tasks[0]),
    team: { strategy: parsed.data.strategy, tasks: tasks.map((t) => t.id) },
    ...withApproval(ctx, tasks, c.lowered),
    ...(replayed ? { replayed: true as const } : {}),
  };
}

export const delegateReviewed = defineCommand({
  name: 'delegate_reviewed',
  description: 'Queue an execute task plus a read-only review of its change by another worker.',
  input: taskInputSchema.extend({ review_by: WORKER, client_request_id: CLIENT_REQUEST_ID.optional() }),
  readOnly: false,
  handler(ctx, input) {
    const { review_by, client_request_id: _id, ...task } = input;
    const c = createContext(ctx);
    const { tasks, replayed } = createOnce(ctx, 'delegate_reviewed', input, () => {
      const [exec] = createTasks(c, [{ ...task, kind: 'execute' }]);
      return [exec, ...chainReviews(c, [exec], review_by)];
    });
    const [exec, review] = tasks;
    return { task: presentTask(ctx, exec), review: presentTask(ctx, review), ...withApproval(ctx, tasks, c.lowered), ...(replayed ? { replayed: true as const } : {}) };
  },
});

export const compareWorkers = defineCommand({
  name: 'compare_workers',
  description: 'Run one execute objective on several workers in separate worktrees (optionally each reviewed by another worker).',
  input: taskInputSchema.omit({ worker: true, kind: true, ref: true, depends_on: true }).extend({
    workers: z.array(WORKER).min(2).max(6),
    review_by: WORKER.optional(),
  }),
  readOnly: false,
  handler(ctx, input) {
    const { workers, review_by, ...task } = input;
    const c = createContext(ctx);
    const r = ctx.engine.write(() => createComparison(c, { task: { ...task, kind: 'execute' }, workers, reviewBy: review_by }));
    return {
      rootId: r.candidates[0].rootId,
      candidates: r.candidates.map((t) => presentTask(ctx, t)),
      reviews: r.reviews.map((t) => presentTask(ctx, t)),
      ...withApproval(ctx, [...r.candidates, ...r.reviews], c.lowered),
    };
  },
});

export const compareReportCommand = defineCommand({
  name: 'compare_report',
  description: 'Diffs, verification and reviews of a comparison side by side, given any of its tasks.',
  input: z.strictObject({ id: TASK_ID }),
  readOnly: true,
  async handler(ctx, input) {
    const diffOf = async (id: string) => {
      try {
        return await runCommand(DIFF_TABLE, ctx, 'get_task_diff', { id });
      } catch (e) {
        if (isAppError(e)) return { error: e.toJSON() };
        throw e;
      }
    };
    return compareReport(createContext(ctx), input.id, diffOf);
  },
});

export const ORCHESTRATION_COMMANDS = [orchestrateGoal, delegateReviewed, compareWorkers, compareReportCommand];
