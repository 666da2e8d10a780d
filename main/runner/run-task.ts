import { join } from 'node:path';
import { isAppError, type TaskErrorCode } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { finishWorkspace, inspectChanges, prepareWorkspace, runVerification, type PreparedWorkspace, type VerifyReport } from '../isolation/workspace.js';
import { describeConflicts, integrateSources } from '../isolation/integrate.js';
import { teamTagOf } from '../tasks/contract/team-tag.js';
import { pendingRedirect, takeRedirect } from '../tasks/controls.js';
import { endFencedAttempt, recordAttemptProcess, updateFencedFields } from '../store/fence.js';
import { appendEvent } from '../store/events.js';
import { getTask, getTaskState } from '../store/tasks.js';
import { unsealTask } from '../tasks/secrets.js';
import { resumeRequestOf } from '../tasks/ops.js';
import { resumeOrphanOrSay } from '../tasks/auto-resume.js';
import { autoRepairsOf } from '../tasks/auto-repair.js';
import { sandboxFor } from '../tasks/route-rule.js';
import { move, transition, type Fence } from '../tasks/state.js';
import type { Task, TaskStatus } from '../tasks/types.js';
import type { NormalizedEvent, WorkerAdapter, WorkerTurn } from '../workers/adapter.js';
import { minimalEnv } from '../workers/env.js';
import { resolveAdapter } from '../workers/registry.js';
import { resolveRoute } from '../workers/routing.js';
import { authMissingMessage, resolveAuth, workerAuthSettings } from '../workers/credentials.js';
import { describeRoute } from '../workers/route-record.js';
import { parseResult, resultJsonSchema } from '../tasks/contract/result-schemas.js';
import { recordPrompt } from '../cachelab/prompt-record.js';
import { buildPrompt, buildRedirectPrompt, buildRepairPrompt } from './prompt.js';
import { treeMarkerEnv } from '../platform/proc/marker.js';
import { useSpawner } from '../platform/proc/spawner.js';
import { trimHeap } from './heap-trim.js';
import { resumedTurn } from './resumed-turn.js';
import { runTurn, type TurnResult } from './turn.js';
import { OutputBudget } from './output-budget.js';
import { deferTurnRecords, Deferred, fenceRunEvents, landEndWrite, outputTruncation, persistEvents, threadUsageOf, type EndWriteContext } from './task-writes.js';
import { storeFaultOf, storeFullError } from '../store/store-faults.js';
import { checkTurnForInput, MAX_DENIALS_PER_ATTEMPT, permissionServerFor, runBudget, stopForInput, WaitForInput } from './input-requests.js';
import { mkdirPrivate } from '../core/private-home.js';
import { countTurn } from '../tasks/budget.js';
import { SpendGuard } from './spend-guard.js';
import { stopForBudget } from './budget-stop.js';
import { RateLimited, requeueRateLimited, type RouteMove } from './rate-limited.js';
import { retryAtOf } from '../workers/rate-limit.js';
import { INFRA_CODES, isInfraFailure } from './infra-failure.js';
import { abortError, StopTask } from './stop-task.js';

export interface RunContext {
  engine: EngineContext;
  runnerId: string;
  /** This runner's fleet host (null on one home): where a task it orphans on losing its lease resumes (tasks/auto-resume.ts). */
  host?: string | null;
  /** Aborted with reason 'timeout' | 'cancel' | 'shutdown' | 'leader_lost'. */
  signal: AbortSignal;
  killGraceMs: number;
  /** A provider rate limit (`retryAt`: the reset its CLI named, ms, or null), in the requeue's transaction; returns the other route the task takes, if any. */
  onRateLimit?: (worker: string, retryAt: number | null) => RouteMove | null | void;
  /** A turn of this worker succeeded (clears rate-limit backoff and closes its breaker). */
  onWorkerOk?: (worker: string) => void;
  /** The task failed for an infrastructure reason of its worker (the circuit breaker counts these). */
  onInfraFailure?: (worker: string, message: string, byGateway: boolean) => void;
  /** Called when a plan task completed with a valid plan (orchestration expands it). */
  onPlan?: (task: Task, result: unknown) => void;
  /** What a team member reads of the steps before it (orchestration's teams), or null outside a team. */
  teamInputs?: (task: Task) => Promise<string | null>;
  /** Aborted when the leader stops running tasks; `endsWaiting`, `onStoreFault`: see landEndWrite. */
  stopped?: AbortSignal;
  endsWaiting?: Set<string>;
  onStoreFault?: (err: unknown) => void;
  /** The run's budgets (set by runTask). */
  guard?: SpendGuard;
}

/**
 * Run one claimed task to an end state: workspace → worker turn(s) → change inspection →
 * verification (with auto-repair follow-ups in the same native session) → result. Every state change
 * is a compare-and-set; if the task was moved by someone else (orphaned on takeover), it stops quietly.
 */
export async function runTask(ctx: RunContext, taskId: string): Promise<TaskStatus> {
  // Only a leader runs tasks: from here on its forks (worker turns, git) go through the spawner helper.
  useSpawner();
  const stored = getTask(ctx.engine.db, taskId);
  if (!stored) return 'failed';
  ctx.engine.refreshConfig(stored.createdAt);
  ctx = { ...ctx, engine: fenceRunEvents(ctx.engine, taskId, { attempt: stored.attempt, runnerId: ctx.runnerId }) };
  const { engine } = ctx;
  let task: Task;
  try {
    task = unsealTask(engine.db, engine.home.root, stored);
  } catch (err) {
    // The sealed originals cannot be read here (another host's key, a lost secret.key): end the task
    // saying so, rather than leave it claimed and never run.
    return await finishWithError(ctx, stored, err);
  }
  const resume = resumeRequestOf(engine.db, task);
  // An answered request continues the same run: its timeout keeps counting from where it paused.
  const budget = runBudget(ctx.signal, task, resume);
  // Tokens, cost, turns and wall time of the task, counted live: reaching one aborts the run with 'budget'.
  const guard = new SpendGuard(engine.db, engine.config, task);
  const outer = budget.signal;
  ctx = { ...ctx, signal: AbortSignal.any([outer, guard.signal]), guard };
  let ws: PreparedWorkspace | null = null;
  const later = new Deferred();
  try {
    const sources = integrationSources(task);
    // An integration runs no worker CLI: LightWorker merges the sources itself, then verifies as usual.
    const adapter = sources ? null : resolveAdapter(engine, task.worker);
    ws = await prepareWorkspace(engine, task, ctx.signal, { keepWorktree: resume !== null, readOnlyInPlace: adapter?.confinesReadOnly?.(task) === true });
    checkAbort(ctx);
    if (resume?.reverify) return await reverifyOnly(ctx, task, ws);
    if (sources || !adapter) return await integrate(ctx, task, ws, sources ?? []);
    const runDir = join(engine.home.artifacts, task.id, `attempt-${task.attempt}`);
    mkdirPrivate(runDir);
    const route = resolveRoute(engine.config, task);
    const auth = resolveAuth(task.worker, workerAuthSettings(engine.config, task.worker), route.gateway);
    if (!auth.ok) throw new StopTask('failed', 'auth_missing', authMissingMessage(task.worker, auth));
    const resultSchema = resultJsonSchema(task.kind);
    const prompt = buildPrompt(task, { resultSchema, config: engine.config, db: engine.db });
    // Team members (a reviewer, a synthesizer, a judge) also read what the steps before them produced.
    const inputs = (await ctx.teamInputs?.(task)) ?? null;
    if (inputs) prompt.text += `\n${inputs}\n`;
    const baseTurn: WorkerTurn = {
      task,
      prompt: prompt.text,
      workdir: ws.workdir,
      sandbox: sandboxFor(task.kind),
      resultSchema,
      resumeSessionId: null,
      runDir,
      shareDir: join(engine.home.root, 'cache'),
      model: route.model,
      reasoningEffort: route.reasoningEffort,
      gateway: route.gateway,
      baseEnv: minimalEnv({
        LIGHTWORKER_DEPTH: String(task.depth + 1),
        ...treeMarkerEnv(engine.home.root, task.id, task.attempt),
        ...ws.env,
      }),
      permissionServer: permissionServerFor(engine, adapter, task),
      auth,
    };
    // Written with the worker's spawn (or the end that comes first), in one transaction.
    later.add(() => {
      recordPrompt(engine, task, prompt, baseTurn);
      appendEvent(engine.db, task.id, 'task.route', { attempt: task.attempt, ...describeRoute(task.worker, baseTurn, auth) });
    });

    let first = resume ? resumedTurn(engine, adapter, baseTurn, resume, ws.kept === true) : baseTurn;
    // A redirect made while the task waited: a fresh prompt already states it; a session is told.
    if (pendingRedirect(engine.db, task.id) !== null && engine.write(() => takeRedirect(engine.db, task.id)) && first.resumeSessionId) first = { ...first, prompt: buildRedirectPrompt(task.objective) + '\n' + first.prompt };
    // Later turns of this attempt continue the session where it lives (a resumed one: its own runDir).
    const sessionTurn = { ...baseTurn, runDir: first.runDir };
    // One output budget for the attempt's turns: a flood in the first leaves the repairs only what is left.
    const output = new OutputBudget(engine.config.output.max_events);
    let turn = await runWorkerTurn(ctx, adapter, first, 'starting', later, output);
    let repairsLeft = autoRepairsOf(task, engine.config);
    // When nothing but the inspection stands between the worker's end and the task's completion (no verify
    // commands, not a plan whose answer is checked next), `verifying`, the inspection and the changes go
    // into the completing transaction: three commits less. Meanwhile the task still reads `running`.
    const direct = task.verify.length > 0 || task.kind === 'plan';
    for (;;) {
      const toVerifying = () => move(engine.db, task.id, 'running', 'verifying', { reason: 'worker finished', fence: fenceOf(ctx, task) });
      if (direct) later.write(engine, toVerifying);
      else later.add(toVerifying, { record: false });
      const changes = await inspectChanges(engine, task, ws, direct ? undefined : later.add);
      // A read-only task's changes.inspected already says all of it (nothing changed, or the violations).
      if (task.kind === 'execute') {
        later.add(() =>
          appendEvent(engine.db, task.id, 'task.changes', { changedFiles: changes.changedFiles.slice(0, 200), empty: changes.empty, violations: changes.violations, diff: changes.diffArtifact }),
        );
      }
      if (direct || !changes.ok) later.write(engine, () => undefined);
      if (!changes.ok) throw new StopTask('failed', 'boundary_violation', `changes outside the task's boundary: ${changes.violations.join(', ')}`);
      checkAbort(ctx);
      const verify: VerifyReport = await runVerification(engine, task, ws, ctx.signal);
      checkAbort(ctx);
      if (verify.ok) break;
      const failures = failureText(verify);
      if (repairsLeft <= 0 || !turn.sessionId) {
        throw new StopTask('failed', 'verification_failed', `verification failed${repairsLeft <= 0 ? '' : ' and the worker has no session to repair in'}:\n${failures.slice(-2000)}`);
      }
      repairsLeft--;
      engine.write(() => move(engine.db, task.id, 'verifying', 'running', { reason: 'auto-repair: verification failed', event: { repairsLeft }, fence: fenceOf(ctx, task) }));
      turn = await runWorkerTurn(ctx, adapter, { ...sessionTurn, prompt: buildRepairPrompt(failures.slice(-8000)), resumeSessionId: turn.sessionId }, 'running', later, output);
    }

    const parsed = parseResult(task.kind, turn.finalText);
    if (task.kind === 'plan' && !parsed.schemaValid) throw new StopTask('failed', 'invalid_plan', `the planner's answer is not a valid plan: ${parsed.problem}`);
    await finishWorkspace(engine, task, ws);
    await landEndWrite(endWrites(ctx, task.id), () => later.write(engine, () => {
      move(engine.db, task.id, 'verifying', 'completed', {
        reason: parsed.schemaValid ? 'verified' : `verified; result not schema-valid (${parsed.problem})`,
        fields: { result: parsed.result, schemaValid: parsed.schemaValid, pid: null },
        fence: fenceOf(ctx, task),
      });
      endAttempt(ctx, task, 'completed', null);
      if (task.kind === 'plan' && ctx.onPlan) ctx.onPlan(getTask(engine.db, task.id)!, parsed.result);
    }));
    return 'completed';
  } catch (err) {
    await landEndWrite(endWrites(ctx, task.id), () => later.flush(engine));
    await finishWorkspace(engine, task, ws);
    if (err instanceof WaitForInput && !ctx.signal.aborted) {
      await landEndWrite(endWrites(ctx, task.id), () => stopForInput(engine, task, err.request));
      return 'waiting_input';
    }
    if (err instanceof RateLimited && !ctx.signal.aborted) {
      // The worker's pause is written with the requeue: no claim can come between them.
      if (await landEndWrite(endWrites(ctx, task.id), () => requeueRateLimited(engine, task, err, () => ctx.onRateLimit?.(task.worker, err.retryAt), fenceOf(ctx, task)))) return 'queued';
    }
    const crossed = guard.crossed;
    const ended = crossed && !outer.aborted ? await landEndWrite(endWrites(ctx, task.id), () => stopForBudget(engine, task, crossed, guard.spent, fenceOf(ctx, task))) : null;
    if (ended) return ended;
    return await finishWithError(ctx, task, err);
  } finally {
    budget.dispose();
    guard.dispose();
    await finishWorkspace(engine, task, ws);
    trimHeap();
  }
}

function failureText(verify: VerifyReport): string {
  return verify.results.filter((r) => r.exitCode !== 0).map((r) => `$ ${Array.isArray(r.command) ? r.command.join(' ') : r.command}\n(exit ${r.exitCode}${r.timedOut ? ', timed out' : ''})\n${r.outputTail}`).join('\n\n');
}

/** `reverify`: the attempt runs no worker turn, only the change inspection and the verify commands. */
async function reverifyOnly(ctx: RunContext, task: Task, ws: PreparedWorkspace, how = { reason: 'reverify: verification only, no worker turn', result: undefined as unknown }): Promise<TaskStatus> {
  const { engine } = ctx;
  engine.write(() => transition(engine.db, task.id, 'starting', 'verifying', { reason: how.reason, fence: fenceOf(ctx, task) }));
  const changes = await inspectChanges(engine, task, ws);
  if (!changes.ok) throw new StopTask('failed', 'boundary_violation', `changes outside the task's boundary: ${changes.violations.join(', ')}`);
  const verify = await runVerification(engine, task, ws, ctx.signal);
  checkAbort(ctx);
  if (!verify.ok) throw new StopTask('failed', 'verification_failed', `verification failed:\n${failureText(verify).slice(-2000)}`);
  engine.write(() => {
    transition(engine.db, task.id, 'verifying', 'completed', {
      reason: how.result !== undefined ? 'verified' : 'reverified',
      fields: { pid: null, ...(how.result !== undefined ? { result: how.result, schemaValid: true } : {}) },
      fence: fenceOf(ctx, task),
    });
    endAttempt(ctx, task, 'completed', null);
  });
  return 'completed';
}

/**
 * An integration task (orchestration/teams.ts): LightWorker merges the sources' verified commits into the
 * worktree, one 3-way merge each; any conflict fails the task with one line per file. Then the usual
 * inspection and verification, without a worker turn.
 */
async function integrate(ctx: RunContext, task: Task, ws: PreparedWorkspace, sources: string[]): Promise<TaskStatus> {
  const r = await integrateSources(ctx.engine, task, ws.workdir, sources);
  checkAbort(ctx);
  if (r.conflicts.length) {
    throw new StopTask('failed', 'merge_conflict', `${r.conflicts.length} file(s) conflict; nothing was integrated, and the user's branch is untouched:\n${describeConflicts(r.conflicts)}`);
  }
  const summary = `merged ${r.merged.length} verified task commits: ${r.merged.map((m) => m.source).join(', ')}`;
  return reverifyOnly(ctx, task, ws, { reason: `integrated ${r.merged.length} tasks; verifying`, result: { summary, files_changed: [], notes: null } });
}

/** The sources of an integration task, or null for any other task. */
function integrationSources(task: Task): string[] | null {
  const tag = teamTagOf(task.metadata);
  return tag?.role === 'integrate' && task.kind === 'execute' ? (tag.sources ?? []) : null;
}

/**
 * One worker turn, with the task moved to running once the process exists. A turn that asked a person
 * throws WaitForInput; one whose ask the policy denied gets the denial in the same session (at most
 * MAX_DENIALS_PER_ATTEMPT times).
 */
async function runWorkerTurn(ctx: RunContext, adapter: WorkerAdapter, turn: WorkerTurn, from: 'starting' | 'running', later: Deferred, output: OutputBudget, denials = 0): Promise<TurnResult> {
  const { engine } = ctx;
  const id = turn.task.id;
  const withRunDir = (events: NormalizedEvent[]) => events.map((e) => (e.type === 'worker.started' ? { ...e, runDir: turn.runDir } : e));
  if (turn.resumeSessionId) {
    // The session's totals may still be in the previous turn's deferred events: written first.
    later.write(engine, () => undefined);
    turn = { ...turn, threadUsage: threadUsageOf(engine, id, turn.resumeSessionId) };
  }
  // A turn past max_turns never starts (the signal is aborted with 'budget'); each one admitted is counted.
  if (ctx.guard && !ctx.guard.admitTurn()) checkAbort(ctx);
  later.add(() => countTurn(engine.db, id));
  const dropped = { ...output.dropped };
  let parsed = 0;
  const result = await runTurn(adapter, turn, {
    signal: ctx.signal,
    killGraceMs: ctx.killGraceMs,
    rawLogPath: join(turn.runDir, 'stdout.jsonl'),
    rawLogMaxBytes: engine.config.output.raw_log_bytes,
    budget: output,
    // Live events in batches of up to 20 ms; those still held when the worker exits ride with the task's
    // next transaction (for a fast worker: its completion), one commit less (measured in a 200-task drain, npm run bench).
    eventBatchMs: 20,
    deferTrailing: true,
    onSpawn: (pid, startTime) => {
      later.write(engine, () => {
        const fence = fenceOf(ctx, turn.task);
        if (from === 'starting') move(engine.db, id, 'starting', 'running', { reason: 'worker spawned', fields: { pid, pidStart: startTime }, event: { pid }, fence });
        else updateFencedFields(engine.db, id, fence, { pid, pidStart: startTime });
        recordAttemptProcess(engine.db, id, fence, pid, startTime);
      });
    },
    onEvents: (events) => persistEvents(engine, turn.task, withRunDir(events)),
    onParsed: (events) => {
      parsed += events.length;
      ctx.guard?.observe(events);
    },
  });
  const keepTrailing = () => deferTurnRecords(later, engine, turn.task, withRunDir(result.trailing), outputTruncation(output, dropped, result.rawLogDropped, engine.config.output.max_events));
  if (result.aborted) {
    keepTrailing();
    throw abortError(result.aborted);
  }
  if (from === 'starting' && getTaskState(engine.db, id)?.status === 'starting') {
    // The worker ended before its spawn was recorded as running (very fast process); record it now.
    later.write(engine, () => move(engine.db, id, 'starting', 'running', { reason: 'worker spawned', fence: fenceOf(ctx, turn.task) }));
  }
  keepTrailing();
  const denied = checkTurnForInput(engine, turn, result, later.writer(engine));
  if (denied !== null) {
    if (denials >= MAX_DENIALS_PER_ATTEMPT) throw new StopTask('failed', 'request_denied', `the worker kept asking for what the policy denies (${denials} denials this attempt)`);
    return runWorkerTurn(ctx, adapter, { ...turn, prompt: denied, resumeSessionId: result.sessionId }, 'running', later, output, denials + 1);
  }
  // Redirected while this turn ran: the next turn of the same session gets the new objective.
  if (result.ok && result.sessionId && pendingRedirect(engine.db, id) !== null && later.write(engine, () => takeRedirect(engine.db, id))) {
    const latest = unsealTask(engine.db, engine.home.root, getTask(engine.db, id)!);
    return runWorkerTurn(ctx, adapter, { ...turn, prompt: buildRedirectPrompt(latest.objective), resumeSessionId: result.sessionId }, 'running', later, output, denials);
  }
  if (!result.ok) {
    const code = result.error?.code ?? 'worker_failed';
    const detail = result.error?.message ?? `worker exited with code ${result.exitCode}`;
    if (code === 'rate_limited') throw new RateLimited(detail, retryAtOf(`${detail}\n${result.stderrTail}`));
    throw new StopTask('failed', code, detail, isInfraFailure(result, parsed, turn.gateway !== null));
  }
  ctx.onWorkerOk?.(adapter.name);
  return result;
}

function checkAbort(ctx: RunContext): void {
  if (ctx.signal.aborted) throw abortError(String(ctx.signal.reason));
}

/** The fencing token of this run: the attempt it claimed, as this runner (see tasks/state.ts Fence). */
function fenceOf(ctx: RunContext, task: Task): Fence {
  return { attempt: task.attempt, runnerId: ctx.runnerId };
}

function endAttempt(ctx: RunContext, task: Task, status: string, errorCode: TaskErrorCode | null): void {
  endFencedAttempt(ctx.engine.db, task.id, fenceOf(ctx, task), status, errorCode);
}

function endWrites(ctx: RunContext, taskId: string): EndWriteContext {
  return { taskId, home: ctx.engine.home.root, stopped: ctx.stopped, endsWaiting: ctx.endsWaiting, onStoreFault: ctx.onStoreFault };
}

async function finishWithError(ctx: RunContext, task: Task, err: unknown): Promise<TaskStatus> {
  const { engine } = ctx;
  let status: TaskStatus;
  let code: TaskErrorCode;
  let message: string;
  if (err instanceof StopTask) ({ status, code, message } = err);
  else if (err instanceof RateLimited) [status, code, message] = ['failed', 'rate_limited', err.message];
  else if (ctx.signal.aborted) ({ status, code, message } = abortError(String(ctx.signal.reason)));
  else if (storeFaultOf(err, engine.home.root) === 'full') [status, code, message] = ['failed', 'disk_full', storeFullError(engine.home.db, engine.home.root, err).message];
  else if (isAppError(err)) [status, code, message] = ['failed', err.code, err.message];
  else [status, code, message] = ['failed', 'internal', `internal error: ${(err as Error).message}`];
  try {
    await landEndWrite(endWrites(ctx, task.id), () => engine.write(() => {
      const cur = getTask(engine.db, task.id);
      if (!cur || !['starting', 'running', 'verifying'].includes(cur.status)) return;
      if (code === 'shutdown') message = message.replace('<id>', task.id);
      const lost = code === 'orphaned';
      const moved = transition(engine.db, task.id, cur.status, status, { reason: message.split('\n')[0].slice(0, 300), fields: { errorCode: code, errorMessage: message, pid: null }, fence: fenceOf(ctx, task), ...(lost ? { event: { cause: 'runner_lost' } } : {}) });
      endAttempt(ctx, task, status, code);
      // Lost its lease, not reaped yet: recovery will never see this orphan, so its decision is made here (the trees are dead).
      if (lost) resumeOrphanOrSay(engine.db, engine.config, moved, ctx.host ?? null);
    }));
    if (INFRA_CODES.has(code) || (err instanceof StopTask && err.infra)) ctx.onInfraFailure?.(task.worker, message, err instanceof StopTask && err.infra === 'gateway');
  } catch (e) {
    // Someone else moved the task (e.g. orphaned after a takeover); their state stands.
    if (!isAppError(e)) throw e;
  }
  return status;
}
