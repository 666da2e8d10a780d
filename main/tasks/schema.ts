import { z } from 'zod';
import { EFFORTS, KINDS, MODES } from '../core/config.js';
import { rootBudgetSchema } from './budget.js';

export const MAX_OBJECTIVE_BYTES = 64 * 1024;
export const TASK_ID = z.string().regex(/^[0-9A-HJKMNP-TV-Z]{26}$/, 'a task id (26-character ULID)');

const utf8Max = (max: number) => (s: string) => Buffer.byteLength(s, 'utf8') <= max;

/**
 * Text without NUL bytes: a NUL cannot cross into argv, env or most tools, so it is refused at
 * input rather than failing the task later.
 */
export function noNul<S extends z.ZodString>(schema: S) {
  return schema.refine((s) => !s.includes('\0'), 'contains a NUL byte');
}

export const verifyCommandSchema = z.union([
  noNul(z.string().min(1).max(4096)),
  z.array(noNul(z.string().max(4096))).min(1).max(256),
]);

/** One task as a caller describes it (CLI submit, MCP delegate_task, HTTP, IPC). */
export const taskInputSchema = z.strictObject({
  /** A caller-chosen id local to a batch, referenced by other tasks' depends_on in the same batch. */
  ref: z.string().min(1).max(64).regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . -').optional(),
  name: noNul(z.string().min(1).max(200)).optional(),
  objective: noNul(z.string().min(1, 'objective must not be empty')).refine(
    utf8Max(MAX_OBJECTIVE_BYTES),
    `objective is larger than ${MAX_OBJECTIVE_BYTES} bytes`,
  ),
  kind: z.enum(KINDS).default('explore'),
  workspace: noNul(z.string().min(1).max(4096)),
  base_ref: z.string().min(1).max(256).regex(/^[^\s~^:?*[\\]+$/, 'a git ref').optional(),
  worker: z.string().min(1).max(64).regex(/^[a-z0-9][a-z0-9_-]*$/, 'a worker name').optional(),
  model: z.string().min(1).max(128).optional(),
  reasoning_effort: z.enum(EFFORTS).optional(),
  profile: z.string().min(1).max(64).optional(),
  gateway: z.string().min(1).max(64).optional(),
  mode: z.enum(MODES).optional(),
  type: z.enum(['chore', 'feature', 'hotfix', 'refactor']).optional(),
  priority: z.number().int().min(0).max(100).optional(),
  timeout_s: z.number().int().min(1).max(7 * 86_400).optional(),
  allowed_paths: z.array(noNul(z.string().min(1).max(1024))).max(256).optional(),
  success_criteria: z.array(noNul(z.string().min(1).max(2048))).max(64).optional(),
  verify: z.array(verifyCommandSchema).max(32).optional(),
  context_pack: z.string().min(1).max(128).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  depends_on: z.array(z.string().min(1).max(64)).max(64).optional(),
  parent_id: TASK_ID.optional(),
  /** Limits of the new task tree this call creates (concurrency, attempts per task, retries). */
  budget: rootBudgetSchema.optional(),
});
export type TaskInput = z.input<typeof taskInputSchema>;
export type ParsedTaskInput = z.output<typeof taskInputSchema>;

export const batchInputSchema = z.strictObject({
  tasks: z.array(taskInputSchema).min(1).max(100),
});

/**
 * `client_request_id` on the commands that create tasks: a caller that cannot tell whether its call
 * arrived (a dropped MCP connection, a timed-out HTTP request, a re-run script) sends the same id again and
 * gets the first call's tasks back instead of a second set.
 */
// Checked by refinements, not min/max/regex, so that the schema MCP lists stays a bare string with its hint
// (every byte of tools/list is paid on every listing); the checks and their messages are the same.
export const CLIENT_REQUEST_ID = z
  .string()
  .refine((s) => s.length >= 8 && s.length <= 128, 'from 8 to 128 characters (a UUID will do)')
  .refine((s) => /^[A-Za-z0-9_.:-]+$/.test(s), 'letters, digits and _ . : -');
