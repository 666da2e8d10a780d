import { z } from 'zod';

/** Most children a planner may create. */
export const MAX_PLAN_TASKS = 12;
/** Kinds a planner may give its children (a plan does not spawn further planners). */
export const PLAN_CHILD_KINDS = ['explore', 'review', 'execute'] as const;

/**
 * JSON Schema of a planner's final answer, as given to workers (`codex exec --output-schema`, …).
 * Strict-mode compatible (OpenAI structured outputs): every property is listed in `required`, optional
 * ones are nullable, `additionalProperties` is false everywhere, and no keyword outside the strict
 * subset is used. The task limit and id rules are enforced by `planResultSchema` on the way in.
 */
export const PLAN_RESULT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['summary', 'tasks'],
  properties: {
    summary: { type: 'string', description: 'One paragraph: the approach.' },
    tasks: {
      type: 'array',
      description: `At most ${MAX_PLAN_TASKS} tasks forming a DAG.`,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'title', 'kind', 'objective', 'depends_on', 'profile', 'success_criteria', 'verify'],
        properties: {
          id: { type: 'string', description: 'Short id unique in this plan, e.g. "t1" (letters, digits, _ . -).' },
          title: { type: 'string' },
          kind: { type: 'string', enum: [...PLAN_CHILD_KINDS] },
          objective: { type: 'string', description: 'Self-contained instructions for the worker.' },
          depends_on: { type: 'array', items: { type: 'string' }, description: 'ids of tasks in this plan that must finish first.' },
          profile: { type: ['string', 'null'], description: 'planner | fast_worker | deep_worker | reviewer, or null.' },
          success_criteria: { type: 'array', items: { type: 'string' } },
          verify: { type: 'array', items: { type: 'string' }, description: 'Shell commands that must exit 0.' },
        },
      },
    },
  },
} as const;

const planTaskSchema = z.strictObject({
  id: z.string().min(1).max(64).regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . -'),
  title: z.string().trim().min(1).max(200),
  kind: z.enum(PLAN_CHILD_KINDS),
  objective: z.string().trim().min(1).max(64 * 1024),
  depends_on: z.array(z.string().min(1).max(64)).max(MAX_PLAN_TASKS),
  profile: z.string().min(1).max(64).nullable(),
  success_criteria: z.array(z.string().min(1).max(2048)).max(64),
  verify: z.array(z.string().min(1).max(4096)).max(32),
});

/** The same contract as PLAN_RESULT_SCHEMA, with the limits it cannot express in strict mode. */
export const planResultSchema = z.strictObject({
  summary: z.string().max(8192),
  tasks: z.array(planTaskSchema).min(1, 'a plan needs at least one task').max(MAX_PLAN_TASKS, `at most ${MAX_PLAN_TASKS} tasks`),
});
export type PlanResult = z.output<typeof planResultSchema>;

/** Stable rules for planner prompts (role rules: they belong in the cacheable prefix). */
export const PLANNER_RULES = [
  'You are the planner. Do not change any file.',
  `Split the goal into at most ${MAX_PLAN_TASKS} bounded tasks that form a dependency graph (no cycles).`,
  'Each task: a short unique id, a title, kind (explore = read and report, execute = change code, review = check a change),',
  'a self-contained objective, depends_on (ids of this plan), profile or null, success_criteria and verify commands.',
  'Answer with JSON only, matching the given schema.',
].join('\n');
