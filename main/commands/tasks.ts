import { z } from 'zod';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import type { RouteRecord } from '../workers/route-record.js';
import { AppError } from '../core/errors.js';
import { listEvents } from '../store/events.js';
import { listTasks, listWorkspaces, requireTask } from '../store/tasks.js';
import { getPull } from '../store/pulls.js';
import { createTasks, type CreateContext } from '../tasks/create.js';
import { allWorkerNames } from '../workers/registry.js';
import { costOfRoot, costOfTask, effectivePrices, type CostSummary } from '../tasks/cost.js';
import { budgetView } from '../tasks/budget-spend.js';
import { queuedWaitReason } from '../scheduler/queue-reasons.js';
import { approveTask, cancelTask, RETRY_STRATEGIES, retryTask, waitingOn } from '../tasks/ops.js';
import { batchInputSchema, TASK_ID, taskInputSchema } from '../tasks/schema.js';
import { summarizeTask, type NeedsInput, type TaskSummary } from '../tasks/summary.js';
import { withNeeds } from '../requests/needs.js';
import { STATUSES, type Task } from '../tasks/types.js';
import { takeWithin } from './answer-budget.js';
import { CLIENT_REQUEST_ID, createOnce } from './client-request.js';
import { storeCapabilities } from '../store/capabilities.js';
import { fleetWaitingFor } from '../scheduler/fleet.js';
import { authorityOf, defineCommand, FACE_LABELS, HOW_A_PERSON_APPROVES, requirePersonOrAllowed, type CommandContext } from './table.js';
import { taskHop } from '../tasks/route-table.js';

function byWho(ctx: CommandContext): string {
  return FACE_LABELS[ctx.face];
}

export type PresentedTask = Task & { waitingOn?: string[]; waitingFor?: string; needs?: NeedsInput; rerouted?: string };

/**
 * A task as shown to callers: plus `waitingOn` when something upstream needs approval, `waitingFor` when
 * no runner of the fleet can run it, its tree's total is reached or its worker is paused (a rate limit, an open breaker), `needs` when it
 * asks a person.
 */
export function presentTask(ctx: CommandContext, t: Task): PresentedTask {
  const w = upstreamApprovals(ctx, t);
  let shown: PresentedTask = w.length ? { ...t, waitingOn: w } : t;
  const unserved =
    t.status !== 'queued' ? null : ((storeCapabilities(ctx.engine.db).sharedByHosts ? fleetWaitingFor(ctx.engine.db, t.id) : null) ?? queuedWaitReason(ctx.engine.db, ctx.engine.config, t));
  if (unserved) shown = { ...shown, waitingFor: unserved };
  return t.status === 'waiting_input' || t.status === 'paused' ? withNeeds(ctx.engine, shown) : shown;
}

/** Tasks upstream of a not-yet-runnable `t` that await a person (empty for any other status). */
function upstreamApprovals(ctx: CommandContext, t: Task): string[] {
  return t.status === 'queued' || t.status === 'awaiting_approval' ? waitingOn(ctx.engine.db, t.id) : [];
}

/** What task creation needs from a command call, including the workers that can run and who calls. */
export function createContext(ctx: CommandContext): CreateContext & { lowered: string[] } {
  return { db: ctx.engine.db, config: ctx.engine.config, homeRoot: ctx.engine.home.root, depth: ctx.depth, knownWorkers: allWorkerNames(ctx.engine), authority: authorityOf(ctx), lowered: [], cachelab: taskCachelab };
}

/** Told to an agent whose writes wait for a person instead of running (absent for a person's calls). */
export interface ApprovalNotice {
  /** The tasks of this answer that wait for a person's approval. */
  waiting: string[];
  /** auto_execute was asked for (or inherited) and these tasks got auto_readonly instead. */
  modeLowered?: { from: 'auto_execute'; to: 'auto_readonly'; tasks: string[] };
  approvedBy: string;
}

/**
 * `{ approval }` to spread into an agent's answer: which of `tasks` wait for a person, which had their
 * mode lowered (`lowered`, from createContext), and who approves; nothing for a person's call or when
 * nothing waits.
 */
export function withApproval(ctx: CommandContext, tasks: Task[], lowered: string[] = []): { approval?: ApprovalNotice } {
  if (authorityOf(ctx) !== 'agent') return {};
  const waiting = tasks.filter((t) => t.status === 'awaiting_approval').map((t) => t.id);
  if (!waiting.length && !lowered.length) return {};
  return { approval: { waiting, ...(lowered.length ? { modeLowered: { from: 'auto_execute', to: 'auto_readonly', tasks: lowered } } : {}), approvedBy: HOW_A_PERSON_APPROVES } };
}

export const delegateTask = defineCommand({
  name: 'delegate_task',
  description: 'Queue one task for a worker.',
  input: taskInputSchema.extend({ client_request_id: CLIENT_REQUEST_ID.optional() }),
  readOnly: false,
  handler(ctx, input) {
    const c = createContext(ctx);
    const { client_request_id: _id, ...task } = input;
    const { tasks, replayed } = createOnce(ctx, 'delegate_task', input, () => createTasks(c, [task]));
    return { task: presentTask(ctx, tasks[0]), ...withApproval(ctx, tasks, c.lowered), ...(replayed ? { replayed: true as const } : {}) };
  },
});

export const delegateBatch = defineCommand({
  name: 'delegate_batch',
  description: 'Queue several tasks, all or nothing.',
  input: batchInputSchema.extend({ client_request_id: CLIENT_REQUEST_ID.optional() }),
  readOnly: false,
  handler(ctx, input) {
    const c = createContext(ctx);
    const { tasks, replayed } = createOnce(ctx, 'delegate_batch', input, () => createTasks(c, input.tasks));
    return { tasks: tasks.map((t) => presentTask(ctx, t)), ...withApproval(ctx, tasks, c.lowered), ...(replayed ? { replayed: true as const } : {}) };
  },
});

export interface VerificationSummary {
  ok: boolean | null;
  attempt: number;
  commands: { command: unknown; exitCode: number | null; durationMs: number; timedOut: boolean; outputTail: string }[];
  /** The whole output of the run (an artifact), once it has completed. */
  log?: string | null;
}

/** The latest verification run of a task, from its verify.* events (null when none ran). */
/** The route the task's latest turn used (its last `task.route` event), or null before its first run. */
export function lastRoute(ctx: CommandContext, id: string): (RouteRecord & { attempt: number }) | null {
  const { events } = listEvents(ctx.engine.db, { taskId: id, types: ['task.route'], limit: 5000 });
  const last = events.at(-1);
  return last ? (last.payload as unknown as RouteRecord & { attempt: number }) : null;
}

/** Why the task's current attempt left its first route for its model's other one (a rate limit), or null. */
function lastReroute(ctx: CommandContext, t: Task): string | null {
  const last = listEvents(ctx.engine.db, { taskId: t.id, types: ['task.rerouted'], limit: 5000 }).events.at(-1);
  return (last && last.type === 'task.rerouted' && last.payload.attempt === t.attempt ? last.payload.message : null) ?? null;
}

/** What LightWorker put back in the user's repository after the task's runs (its `custody.restored` events), oldest first. */
export interface CustodySummary {
  attempt: number;
  repo: string;
  count: number;
  restored: { area: string; path: string; change: string; was?: string; found?: string }[];
  failed?: { path: string; error: string }[];
  /** Where what the task left is kept. */
  artifact: string;
  note: string;
}

export function custodyRestores(ctx: CommandContext, id: string): CustodySummary[] {
  return listEvents(ctx.engine.db, { taskId: id, types: ['custody.restored'], limit: 100 }).events.map((e) => e.payload as unknown as CustodySummary);
}

export function lastVerification(ctx: CommandContext, id: string): VerificationSummary | null {
  const { events } = listEvents(ctx.engine.db, { taskId: id, types: ['verify.started', 'verify.command', 'verify.completed'], limit: 5000 });
  const start = events.map((e) => e.type).lastIndexOf('verify.started');
  if (start === -1) return null;
  const run = events.slice(start);
  const done = run.find((e) => e.type === 'verify.completed');
  return {
    ok: done ? Boolean(done.payload.ok) : null,
    attempt: Number(run[0].payload.attempt ?? 0),
    log: done ? ((done.payload.log as string | null) ?? null) : null,
    commands: run
      .filter((e) => e.type === 'verify.command')
      .map((e) => ({
        command: e.payload.command,
        exitCode: (e.payload.exitCode as number | null) ?? null,
        durationMs: Number(e.payload.durationMs ?? 0),
        timedOut: Boolean(e.payload.timedOut),
        outputTail: String(e.payload.outputTail ?? ''),
      })),
  };
}

/** A task's cost and its whole tree's: tokens × the price table (config `[prices]` over the defaults). */
function costOf(ctx: CommandContext, t: Task): { task: CostSummary; root: CostSummary } {
  const prices = effectivePrices(ctx.engine.config);
  return { task: costOfTask(ctx.engine.db, prices, t.id), root: costOfRoot(ctx.engine.db, prices, t.rootId).total };
}

export const getTask = defineCommand({
  name: 'get_task',
  description: 'A task in full, with its last verification.',
  input: z.strictObject({ id: TASK_ID }),
  readOnly: true,
  handler(ctx, input) {
    const task = requireTask(ctx.engine.db, input.id);
    const custody = custodyRestores(ctx, input.id);
    const pull = getPull(ctx.engine.db, task.id);
    const rerouted = lastReroute(ctx, task);
    return {
      task: rerouted ? { ...presentTask(ctx, task), rerouted } : presentTask(ctx, task),
      verification: lastVerification(ctx, input.id),
      cost: costOf(ctx, task),
      budget: budgetView(ctx.engine.db, ctx.engine.config, task),
      route: lastRoute(ctx, input.id),
      // The gateway it runs through (decided at creation, moved by a rate-limit reroute) as the provider knows the model.
      via: taskHop(ctx.engine.config, task),
      ...(custody.length ? { custody } : {}),
      ...(pull ? { pull: { number: pull.number, url: pull.url, forge: pull.forge, branch: pull.branch, base: pull.base, draft: pull.draft, state: pull.state, checks: pull.checks, review: pull.review, headSha: pull.headSha, fixRounds: pull.fixRounds, fixing: pull.fixing, lastError: pull.lastError } } : {}),
    };
  },
});

export const listTasksCommand = defineCommand({
  name: 'list_tasks',
  description: 'Task summaries, newest first, cursor-paged; detail: full records.',
  input: z.strictObject({
    status: z.array(z.enum(STATUSES)).max(STATUSES.length).optional(),
    root_id: TASK_ID.optional(),
    search: z.string().min(1).max(200).optional(),
    limit: z.number().int().min(1).max(10_000).default(100),
    cursor: TASK_ID.optional(),
    detail: z.boolean().default(false),
  }),
  readOnly: true,
  handler(ctx, input): { tasks: (TaskSummary | PresentedTask)[]; has_more: boolean; cursor: string | null } {
    const query = { status: input.status, rootId: input.root_id, search: input.search };
    // One row past the page tells whether more exist, without a second query.
    const rows = listTasks(ctx.engine.db, { ...query, limit: input.limit + 1, before: input.cursor });
    const page = rows.slice(0, input.limit);
    const show = (t: Task): TaskSummary | PresentedTask => (input.detail ? presentTask(ctx, t) : summarizeTask(t, upstreamApprovals(ctx, t)));
    const tasks = ctx.face === 'mcp' ? takeWithin(page, show) : page.map(show);
    const last = tasks.at(-1)?.id;
    const hasMore = last !== undefined && (tasks.length < page.length || rows.length > page.length);
    return { tasks, has_more: hasMore, cursor: hasMore ? last! : null };
  },
});

export const listWorkspacesCommand = defineCommand({
  name: 'list_workspaces',
  description: 'Repositories tasks ran in, most recently used first (pickers and filters).',
  input: z.strictObject({ limit: z.number().int().min(1).max(500).default(50) }),
  readOnly: true,
  handler(ctx, input) {
    return { workspaces: listWorkspaces(ctx.engine.db, input.limit) };
  },
});

export interface TreeNode {
  id: string;
  name: string;
  kind: Task['kind'];
  status: Task['status'];
  dependsOn: string[];
  /** Estimated USD (tokens × prices); null without priced usage. */
  costUsd: number | null;
  children: TreeNode[];
}

export const getTaskTree = defineCommand({
  name: 'get_task_tree',
  description: "A task's tree: root, children, dependencies.",
  input: z.strictObject({ id: TASK_ID }),
  readOnly: true,
  handler(ctx, input) {
    const t = requireTask(ctx.engine.db, input.id);
    const all = listTasks(ctx.engine.db, { rootId: t.rootId, limit: 10_000 }).reverse();
    const cost = costOfRoot(ctx.engine.db, effectivePrices(ctx.engine.config), t.rootId);
    const nodes = new Map<string, TreeNode>(
      all.map((x) => [x.id, { id: x.id, name: x.name, kind: x.kind, status: x.status, dependsOn: x.dependsOn, costUsd: cost.byTask.get(x.id) ?? null, children: [] }]),
    );
    const roots: TreeNode[] = [];
    for (const x of all) {
      const node = nodes.get(x.id)!;
      const parent = x.parentId ? nodes.get(x.parentId) : undefined;
      if (parent) parent.children.push(node);
      else roots.push(node);
    }
    return { rootId: t.rootId, roots, count: all.length, cost: cost.total };
  },
});

export const approveTaskCommand = defineCommand({
  name: 'approve_task',
  description: 'Approve a task that awaits a person.',
  input: z.strictObject({ id: TASK_ID }),
  readOnly: false,
  handler(ctx, input) {
    requirePersonOrAllowed(ctx, 'approve_task');
    return { task: ctx.engine.write(() => approveTask(ctx.engine.db, input.id, byWho(ctx))) };
  },
});

export const cancelTaskCommand = defineCommand({
  name: 'cancel_task',
  description: 'Cancel a task, killing its process tree.',
  input: z.strictObject({ id: TASK_ID, reason: z.string().max(500).optional() }),
  readOnly: false,
  destructive: true,
  handler(ctx, input) {
    return { task: ctx.engine.write(() => cancelTask(ctx.engine.db, input.id, byWho(ctx), input.reason)) };
  },
});

export const retryTaskCommand = defineCommand({
  name: 'retry_task',
  description: 'Rerun an ended task (resume: same session and worktree).',
  input: z.strictObject({ id: TASK_ID, strategy: z.enum(RETRY_STRATEGIES).default('same') }),
  readOnly: false,
  handler(ctx, input) {
    if (ctx.depth > ctx.engine.config.limits.max_depth) throw new AppError('forbidden', 'retry_task: delegation depth exceeded');
    const task = ctx.engine.write(() => retryTask(ctx.engine.db, ctx.engine.config, input.id, input.strategy, byWho(ctx), authorityOf(ctx), taskCachelab));
    return { task, ...withApproval(ctx, [task]) };
  },
});

export const TASK_COMMANDS = [delegateTask, delegateBatch, getTask, listTasksCommand, listWorkspacesCommand, getTaskTree, approveTaskCommand, cancelTaskCommand, retryTaskCommand];
