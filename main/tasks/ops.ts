import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { findProfile } from '../core/profiles.js';
import { routedModel } from './route-rule.js';
import { effectiveBudget, getRootBudget } from './budget.js';
import { appendEvent } from '../store/events.js';
import type { Db } from '../store/db.js';
import { closeRequest, pendingRequestOf } from '../store/requests.js';
import { requireTask, updateTaskFields, type TaskFieldUpdate } from '../store/tasks.js';
import { ownerGone } from '../store/task-owners.js';
import { needsApproval } from './create.js';
import { releaseDependents, transition } from './state.js';
import { ACTIVE, type Authority, type Task, type TaskStatus } from './types.js';
import type { TaskCachelab } from './cachelab-hook.js';
import { pinToHost, worktreeHostOf } from './host-pin.js';
import { countStrategyMoves, countTaskStrategyMoves, lastStartedSession, latestStrategyMove } from '../store/task-history.js';
import { setRoute, upstreamAwaitingApproval } from '../store/task-moves.js';

/** Approve a task waiting for a person: awaiting_approval → queued. Run inside a write transaction. */
export function approveTask(db: Db, id: string, by: string): Task {
  const t = requireTask(db, id);
  if (t.status !== 'awaiting_approval') {
    throw new AppError('illegal_transition', `task ${id} is ${t.status}; only a task awaiting approval can be approved`, { status: t.status });
  }
  return transition(db, id, 'awaiting_approval', 'queued', { reason: `approved by ${by}`, fields: { approvedAt: Date.now() }, event: { by } });
}

/**
 * Cancel a task. A task that has not started is cancelled at once; a running one gets a cancel request
 * that its leader acts on (kill the process tree, then `cancelled`), or, when its runner is gone, is
 * cancelled at once too. Returns the task after the change.
 */
export function cancelTask(db: Db, id: string, by: string, reason?: string): Task {
  const t = requireTask(db, id);
  const why = reason ? `cancelled by ${by}: ${reason}` : `cancelled by ${by}`;
  if (t.status === 'awaiting_approval' || t.status === 'queued' || t.status === 'blocked' || t.status === 'waiting_input' || t.status === 'paused') {
    // Nothing runs for these: cancelled at once (a pending question or permission request with them).
    const pending = pendingRequestOf(db, id);
    if (pending && closeRequest(db, pending.id, 'cancelled', { answer: why, answeredBy: by, at: Date.now() })) appendEvent(db, id, 'request.cancelled', { requestId: pending.id, reason: why });
    return transition(db, id, t.status, 'cancelled', { reason: why, fields: { errorCode: 'cancelled', errorMessage: why } });
  }
  if (ACTIVE.has(t.status)) {
    if (!t.cancelRequested) {
      updateTaskFields(db, id, { cancelRequested: true });
      appendEvent(db, id, 'task.cancel_requested', { by, ...(reason ? { reason } : {}) });
    }
    // Nobody runs it any more (its runner stopped or was lost, or another leader leads): ended here, now.
    // A live owner still gets the request above and kills what it runs; its own end then finds it ended.
    if (ownerGone(db, t.runnerId)) return transition(db, id, t.status, 'cancelled', { reason: `${why} (its runner ${t.runnerId ?? 'none'} is gone)`, fields: { errorCode: 'cancelled', errorMessage: why, pid: null } });
    return requireTask(db, id);
  }
  throw new AppError('illegal_transition', `task ${id} is ${t.status}; it can no longer be cancelled`, { status: t.status });
}

export const RETRY_STRATEGIES = ['same', 'fallback_gateway', 'deeper_profile', 'resume'] as const;
/** The resume recovery makes of a task orphaned by its runner's loss (tasks/auto-resume.ts): spends no budget. */
export const AUTO_RESUME_STRATEGY = 'auto_resume';
export type RetryStrategy = (typeof RETRY_STRATEGIES)[number];
/** The states retry_task makes a new attempt of (the console offers Retry on these only: renderer/src/api/types.ts). */
export const RETRYABLE: readonly TaskStatus[] = ['failed', 'timed_out', 'cancelled', 'orphaned'];

/**
 * What `--strategy resume` continues: a run that was interrupted from outside, not one that ended on its
 * own or that a person cancelled on purpose (those get a fresh attempt with `same`).
 */
function isInterrupted(t: Task): boolean {
  return t.status === 'orphaned' || t.status === 'timed_out' || (t.status === 'cancelled' && t.error?.code === 'shutdown');
}

/** The native session the interrupted attempt reported (the task row, else its last worker.started event). */
export function lastSessionOf(db: Db, t: Task): string | null {
  if (t.sessionId) return t.sessionId;
  return lastStartedSession(db, t.id);
}

/**
 * Make a new attempt of an ended task, within its tree's retry budget. Dependents that it blocked
 * are released. `fallback_gateway` switches to the next configured gateway; `deeper_profile` moves to
 * the next profile of [routing.escalation] (its effort, model and worker); `resume` (only for a run stopped by a shutdown, a takeover or its
 * timeout) continues the worker's native session in the same worktree and branch — the runner reads
 * that from the retry's `task.status` event (see resumeRequestOf).
 */
export function retryTask(db: Db, config: Config, id: string, strategy: RetryStrategy, by: string, authority: Authority, cachelab: TaskCachelab): Task {
  const t = requireTask(db, id);
  if (!RETRYABLE.includes(t.status)) {
    throw new AppError('illegal_transition', `task ${id} is ${t.status}; only failed, timed_out, cancelled or orphaned tasks can be retried`, { status: t.status });
  }
  if (strategy === 'resume' && !isInterrupted(t)) {
    throw new AppError(
      'invalid_input',
      `strategy: resume continues a run that was interrupted (stopped by a shutdown, orphaned by a takeover, or timed out); task ${id} is ${t.status}${t.error?.code ? ` (${t.error.code})` : ''}, retry it with --strategy same`,
      { field: 'strategy', status: t.status },
    );
  }
  const budget = effectiveBudget(db, config, t.rootId);
  const source = getRootBudget(db, t.rootId) ? "this tree's budget" : 'limits.retry_budget';
  // Only retries spend the budget: follow-ups, answers and reverifies are new attempts a person asked for.
  const used = countStrategyMoves(db, t.rootId, RETRY_STRATEGIES);
  if (used >= budget.retries) {
    throw new AppError('forbidden', `retry budget of this task tree is used up (${used} of ${budget.retries}, ${source})`);
  }
  // Attempts an automatic resume made after a runner's loss are the infrastructure's, not this task's.
  const made = budget.attempts === null ? 0 : t.attempt - countTaskStrategyMoves(db, t.id, [AUTO_RESUME_STRATEGY]);
  if (budget.attempts !== null && made >= budget.attempts) {
    throw new AppError('forbidden', `task ${id} has made ${made} of the ${budget.attempts} attempts its tree's budget allows`);
  }
  const route = retryRoute(config, t, strategy);
  const changed = route.gateway !== t.gateway || route.effort !== t.reasoningEffort || route.model !== t.model || route.profile !== t.profile || route.worker !== t.worker;
  if (changed) {
    setRoute(db, id, route);
  }
  const resume: ResumeRequest | null =
    strategy === 'resume' ? { sessionId: lastSessionOf(db, t), fromAttempt: t.attempt, interruptedBy: t.error?.code ?? t.status, worktree: t.kind === 'execute' ? t.worktreePath : null } : null;
  const event = changed ? { route: { profile: route.profile, worker: route.worker, effort: route.effort, model: route.model, gateway: route.gateway } } : undefined;
  const next = startNewAttempt(db, t, { strategy, reason: `retry (${strategy}) by ${by}`, resume, event, authority });
  // A changed route is a different cache cohort: re-key it now so scheduling affinity sees it.
  cachelab.assignCohort(db, config, next);
  return next;
}

/**
 * Move an ended task to its next attempt (queued, or awaiting approval when it was never approved and
 * its mode requires it) with the per-attempt fields cleared, record how (`strategy`, and the resume
 * request the runner reads back with resumeRequestOf), and release the dependents it had blocked.
 * A new attempt of an execute task that an `agent` asks for writes again, so it waits for a person
 * whatever its mode and earlier approval. In a fleet, an execute task's attempt that keeps its worktree
 * (every strategy with a resume request) is pinned to the host holding it (`runHost`, else the host of the
 * runner of its last attempt); a fresh one goes wherever the claim rules send it. Shared by retry,
 * follow-up, answer, reverify and automatic resume; runs in the caller's transaction.
 */
export function startNewAttempt(
  db: Db,
  t: Task,
  opts: { strategy: string; reason: string; resume: ResumeRequest | null; authority: Authority; fields?: TaskFieldUpdate; event?: Record<string, unknown>; runHost?: string },
): Task {
  const { resume } = opts;
  const agentWrite = opts.authority === 'agent' && t.kind === 'execute';
  const to: TaskStatus = agentWrite || (t.approvedAt === null && needsApproval(t.mode, t.kind)) ? 'awaiting_approval' : 'queued';
  const runHost = resume && t.kind === 'execute' ? (opts.runHost ?? worktreeHostOf(db, t)) : null;
  const next = transition(db, t.id, t.status, to, {
    reason: opts.reason,
    event: { attempt: t.attempt + 1, strategy: opts.strategy, ...(resume ? { resume } : {}), ...(agentWrite ? { approvalBy: 'a person' } : {}), ...(runHost ? { runHost } : {}), ...opts.event },
    fields: {
      ...(agentWrite ? { approvedAt: null } : {}),
      attempt: t.attempt + 1, cancelRequested: false, errorCode: null, errorMessage: null, result: null, schemaValid: null,
      pid: null, pidStart: null, runnerId: null, startedAt: null, endedAt: null, sessionId: resume?.sessionId ?? null,
      ...opts.fields,
    },
  });
  if (runHost) pinToHost(db, t.id, runHost);
  releaseDependents(db, t.id, (d) => needsApproval(d.mode, d.kind));
  return next;
}

/** A resumed attempt: what it continues. */
export interface ResumeRequest {
  /** The native session to continue; null when the interrupted attempt never reported one. */
  sessionId: string | null;
  fromAttempt: number;
  /** Error code (or status) of the interrupted attempt: shutdown, orphaned, timed_out. */
  interruptedBy: string;
  /** The execute task's worktree the attempt keeps using. */
  worktree: string | null;
  /** Set by a follow-up (tasks/followup.ts): the message for the next turn and what came before. */
  followUp?: FollowUpRequest;
  /** `reverify`: no worker turn, only the verification (tasks/controls.ts). */
  reverify?: boolean;
}

/** A follow-up's part of a resume request. */
export interface FollowUpRequest {
  /** Redacted; the original is sealed under `followup-<attempt>` (tasks/secrets.ts redactAndSeal). */
  message: string;
  by: string;
  /** A short summary of the previous attempt, for a fresh session (another worker, or no session). */
  previous: string;
  /** The worker of the previous attempt when the follow-up switched workers (handoff). */
  fromWorker?: string;
  /** Run time the earlier attempts of this run used (an answered request continues the same run). */
  spentMs?: number;
}

/** The resume request of the task's current attempt, when it was made by `retry --strategy resume`. */
export function resumeRequestOf(db: Db, task: Pick<Task, 'id' | 'attempt'>): ResumeRequest | null {
  const payload = latestStrategyMove(db, task.id);
  if (!payload) return null;
  const p = JSON.parse(payload) as { attempt?: number; strategy?: string; resume?: ResumeRequest };
  return (p.strategy === 'resume' || p.strategy === AUTO_RESUME_STRATEGY || p.strategy === 'followup' || p.strategy === 'answer' || p.strategy === 'reverify') && p.attempt === task.attempt && p.resume ? p.resume : null;
}

type RetryRoute = { gateway: string | null; effort: Task['reasoningEffort']; model: string | null; profile: string | null; worker: string };

function retryRoute(config: Config, t: Task, strategy: RetryStrategy): RetryRoute {
  const same: RetryRoute = { gateway: t.gateway, effort: t.reasoningEffort, model: t.model, profile: t.profile, worker: t.worker };
  if (strategy === 'fallback_gateway') {
    // A model with routes moves between its primary and its fallback; otherwise to the next gateway configured.
    const model = routedModel(config, t, t.profile ? findProfile(config, t.profile) : null).model;
    const routes = model ? config.models.routes[model] : undefined;
    if (routes?.fallback) return { ...same, gateway: t.gateway === routes.fallback.gateway ? routes.primary.gateway : routes.fallback.gateway };
    const names = Object.keys(config.gateways);
    if (names.length < 2 && !(names.length === 1 && t.gateway !== names[0])) {
      throw new AppError('invalid_input', 'strategy: fallback_gateway needs another gateway in config.toml [gateways]');
    }
    const next = names[(names.indexOf(t.gateway ?? '') + 1) % names.length];
    return { ...same, gateway: next };
  }
  if (strategy === 'deeper_profile') {
    const next = nextProfile(config, t);
    const spec = findProfile(config, next)!;
    // The deeper profile's own model, else effort routing picks one for its effort at run time.
    return { ...same, profile: next, effort: spec.reasoning_effort, model: spec.model ?? null, worker: spec.worker ?? t.worker, gateway: spec.gateway ?? t.gateway };
  }
  return same;
}

const EFFORT_RANK = ['low', 'medium', 'high', 'xhigh'];

/**
 * The next profile of [routing.escalation] that runs this task's kind: after the task's profile when
 * it is on the chain, else the first whose effort is above the task's. Refuses at the end of the chain.
 */
function nextProfile(config: Config, t: Task): string {
  const chain = config.routing.escalation.filter((name) => findProfile(config, name)?.kinds.includes(t.kind));
  const at = t.profile ? chain.indexOf(t.profile) : -1;
  const current = t.reasoningEffort ?? (t.profile ? findProfile(config, t.profile)?.reasoning_effort : undefined) ?? 'medium';
  const next = at >= 0 ? chain[at + 1] : chain.find((name) => EFFORT_RANK.indexOf(findProfile(config, name)!.reasoning_effort) > EFFORT_RANK.indexOf(current));
  if (!next) {
    const where = at >= 0 ? `profile ${t.profile} is the last` : `no profile deeper than effort ${current} runs ${t.kind} tasks`;
    throw new AppError('invalid_input', `strategy: deeper_profile: ${where} in routing.escalation (${chain.join(' → ') || 'empty for this kind'})`, { field: 'strategy' });
  }
  return next;
}

/**
 * The tasks that a not-yet-runnable task waits on, transitively, which themselves wait for a person.
 * Empty when nothing upstream needs approval.
 */
export function waitingOn(db: Db, id: string): string[] {
  return upstreamAwaitingApproval(db, id);
}
