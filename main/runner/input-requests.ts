import type { EngineContext } from '../tasks/engine-context.js';
import { mcpLaunch } from '../platform/launch.js';
import { START_HOOK_ENV } from './permission-hook.js';
import { parseEscalation } from '../tasks/contract/escalation.js';
import { decideRequest } from '../requests/policy.js';
import { enterWaiting, openRequest, recordDenied } from '../requests/requests.js';
import { pendingRequestOf, type TaskRequest } from '../store/requests.js';
import { getTask } from '../store/tasks.js';
import type { ResumeRequest } from '../tasks/ops.js';
import type { Task } from '../tasks/types.js';
import type { WorkerAdapter, WorkerTurn } from '../workers/adapter.js';
import type { TurnResult } from './turn.js';
import { closeAttempt } from '../store/attempts.js';

/** Thrown by the runner when a turn ended asking a person: the task moves to waiting_input. */
export class WaitForInput extends Error {
  constructor(readonly request: TaskRequest) {
    super(`waiting for a person: ${request.question}`);
  }
}

/** At most this many policy denials are sent back into one attempt's session before it fails. */
export const MAX_DENIALS_PER_ATTEMPT = 3;

/**
 * After a turn: did it ask a person? A permission prompt recorded by the turn's permission server
 * (Claude Code), or a final answer that escalates (every worker). An ask the policy allows to reach a
 * person throws WaitForInput; one it denies at once returns the message to send back into the same
 * session (the worker continues without it); null when the turn simply ended.
 */
export function checkTurnForInput(engine: EngineContext, turn: WorkerTurn, result: TurnResult, write: <T>(fn: () => T) => T = (fn) => engine.write(fn)): string | null {
  const { task } = turn;
  const pending = pendingRequestOf(engine.db, task.id);
  if (pending && pending.attempt === task.attempt) throw new WaitForInput(pending);
  if (!result.ok) return null;
  const ask = parseEscalation(result.finalText);
  if (!ask) return null;
  const current = getTask(engine.db, task.id) ?? task;
  const d = decideRequest(engine.config, current, turn.workdir, ask);
  const sessionId = result.sessionId ?? current.sessionId;
  if (d.decision === 'deny') {
    write(() => recordDenied(engine.db, current, { ...ask, sessionId }, d.reason));
    return `LightWorker denied your ${ask.kind === 'permission' ? 'permission request' : 'question'} (${d.reason}). Do not ask for it again: continue without it, and finish with the result contract (escalation null), saying in it what is missing.`;
  }
  throw new WaitForInput(write(() => openRequest(engine.db, engine.config, current, { ...ask, sessionId })));
}

/** End the attempt in waiting_input (the runner's half of the request; answering continues it). */
export function stopForInput(engine: EngineContext, task: Task, request: TaskRequest): void {
  engine.write(() => {
    const cur = getTask(engine.db, task.id);
    // Only while the task is still this attempt of this runner (a stale runner's end changes nothing).
    if (cur?.status !== 'running' || cur.attempt !== task.attempt || cur.runnerId !== task.runnerId) return;
    enterWaiting(engine.db, task.id, request);
    closeAttempt(engine.db, task.id, task.attempt, 'waiting_input', Date.now());
  });
}

/** How the turn's CLI starts LightWorker's permission server for this task, when the adapter has a permission tool. */
export function permissionServerFor(engine: EngineContext, adapter: WorkerAdapter, task: Task): WorkerTurn['permissionServer'] {
  if (!adapter.permissionTool) return undefined;
  const launch = mcpLaunch('auto');
  const env: Record<string, string> = { ...launch.env, LIGHTWORKER_HOME: engine.home.root };
  const hook = process.env[START_HOOK_ENV];
  if (hook) env[START_HOOK_ENV] = hook;
  return { command: launch.command, args: [...launch.args, '--permission-for', task.id], env };
}

/**
 * The run's time budget: a task continued after a person answered keeps the time its earlier attempts
 * used, so its timeout pauses while it waits instead of restarting. Returns the signal to run with
 * (aborted with 'timeout' when the budget ends) and a cleanup.
 */
export function runBudget(signal: AbortSignal, task: Task, resume: ResumeRequest | null): { signal: AbortSignal; dispose: () => void } {
  const spent = resume?.followUp?.spentMs ?? 0;
  if (!spent) return { signal, dispose: () => undefined };
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  const timer = setTimeout(() => controller.abort('timeout'), Math.max(0, task.timeoutS * 1000 - spent));
  timer.unref();
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', forward);
    },
  };
}
