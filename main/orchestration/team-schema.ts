import { z } from 'zod';
import { CLIENT_REQUEST_ID, TASK_ID, taskInputSchema } from '../tasks/schema.js';

/** Bounds every team keeps (SPEC: bounded): review rounds, contributors, candidates, integrated sources. */
export const MAX_ROUNDS = 5;
export const MAX_MEMBERS = 6;
export const MAX_SOURCES = 8;

const WORKER = z.string().min(1).max(64).regex(/^[a-z0-9][a-z0-9_-]*$/, 'a worker name');
/** `worker` or `worker:model` (best_of_n runs one worker with several models, too). */
const WORKER_MODEL = z.string().min(1).max(200).regex(/^[a-z0-9][a-z0-9_-]*(:[^\s:]+)?$/, 'a worker name, or worker:model');

/** What every member task of a team shares (the task fields a caller may set for the whole team). */
const shared = taskInputSchema.pick({
  name: true, objective: true, workspace: true, base_ref: true, mode: true, type: true, priority: true, timeout_s: true,
  allowed_paths: true, success_criteria: true, verify: true, context_pack: true, metadata: true, reasoning_effort: true, gateway: true, budget: true,
}).extend({ client_request_id: CLIENT_REQUEST_ID.optional() });

export const teamInputSchema = z.discriminatedUnion('strategy', [
  shared.extend({
    strategy: z.literal('implement_review'),
    /** [implementer, reviewer]: two different workers. */
    workers: z.array(WORKER).length(2, 'implement_review takes two workers: implementer,reviewer'),
    /** Most reviews; after a review with findings and rounds left, the implementer gets a follow-up turn. */
    rounds: z.number().int().min(1).max(MAX_ROUNDS).default(2),
  }),
  shared.extend({
    strategy: z.literal('map_reduce'),
    /** Contributors' workers, cycled over `parts` when those are given. */
    workers: z.array(WORKER).min(1).max(MAX_MEMBERS),
    /** One sub-objective per contributor; without it every worker gets the whole objective. */
    parts: z.array(z.string().trim().min(1).max(16 * 1024)).min(1).max(MAX_MEMBERS).optional(),
    synthesizer: WORKER.optional(),
    /** Contributors read (explore, the default) or change code (execute; the synthesizer then writes one change). */
    contribute: z.enum(['explore', 'execute']).default('explore'),
  }),
  shared.extend({
    strategy: z.literal('best_of_n'),
    workers: z.array(WORKER_MODEL).min(2).max(MAX_MEMBERS),
    /** `rule` (verified first, then smallest diff) or a worker that ranks the verified candidates. */
    judge: z.union([z.literal('rule'), WORKER]).default('rule'),
  }),
  shared.partial({ objective: true, workspace: true }).extend({
    strategy: z.literal('integrate'),
    /** Execute tasks whose verified commits are merged, in this order, onto one new branch. */
    sources: z.array(TASK_ID).min(2).max(MAX_SOURCES),
  }),
]);
export type TeamInput = z.output<typeof teamInputSchema>;
