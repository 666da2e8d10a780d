import { move } from '../tasks/state.js';
import { EventEmitter } from 'node:events';
import { sweepTrees, taskTree, type Tree } from '../platform/proc/sweep.js';
import type { LeaderEngine } from '../store/engine-handle.js';
import { runTask } from '../runner/run-task.js';
import { getSetting, setSetting } from '../store/settings.js';
import type { EventRow } from '../store/events.js';
import { getTask } from '../store/tasks.js';
import { TERMINAL, type TaskStatus } from '../tasks/types.js';
import { resolveAdapter } from '../workers/registry.js';
import { ForeignSeals } from './foreign-seals.js';
import { storeFaultOf } from '../store/store-faults.js';
import { requireLeaderHooks, type LeaderHooks } from './leader-hooks.js';
import { claimTask, listCandidates, pickCandidate, type Candidate } from '../store/claims.js';
import { claimFleetTask, fleetLimitsOf, listFleetCandidates, type FleetCandidate, type FleetIdentity } from './fleet.js';
import { rootBudgetWaits } from '../store/requests.js';
import { MemoryGate } from './memory-admission.js';
import { ClaimBackoff } from './claim-backoff.js';
import { crossedRoots } from '../runner/root-meter.js';
import { rateLimitHook } from './rate-limit-route.js';
import { activeGatewayPauses, activePauses, breakerHooks, gatewayKey, isHalfOpen } from './worker-pauses.js';

export { PAUSE_PREFIX, type WorkerPause } from './worker-pauses.js';

interface Running {
  id: string;
  name: string;
  worker: string;
  rootId: string;
  gateway: string | null;
  /** The attempt it runs (its processes carry this attempt's marker). */
  attempt: number;
  controller: AbortController;
  timer: NodeJS.Timeout;
  done: Promise<TaskStatus>;
}

/** A task this process runs right now, as a shutdown message names it. */
export interface RunningTask {
  id: string;
  name: string;
  worker: string;
}

/**
 * The dispatcher of the leading process. Event-driven: a created, approved or finished task (from this
 * process at once, from others via PRAGMA data_version polling) wakes it; there is no fixed sleep on
 * the dispatch path. Emits 'idle' when nothing is running or runnable, 'task.ended' after each run.
 */
export class Scheduler extends EventEmitter {
  private readonly running = new Map<string, Running>();
  private readonly lastDispatch = new Map<string, number>();
  private readonly perWorker = new Map<string, number>();
  /** Tasks running per gateway (a half-open gateway breaker lets one probe through). */
  private readonly perGateway = new Map<string, number>();
  private affinity: { cohort: string | null; streak: number } = { cohort: null, streak: 0 };
  private wakeQueued = false;
  private stopped = true;
  private paused = false;
  // A graceful shutdown: nothing new is claimed, but cancel requests are still honoured.
  private draining = false;
  private pauseTimer: NodeJS.Timeout | null = null;
  private pauseTimerAt = 0;
  private dispatchSeq = 0;
  /** Why nothing new is claimed now (the store cannot be written), or null. */
  private held: string | null = null;
  /** Tasks whose end is written but not yet recorded: retried until the store takes it (runner/run-task.ts). */
  readonly endsWaiting = new Set<string>();
  /** Aborted by stop(): a task waiting for space to record its end stops waiting. */
  private stopSignal = new AbortController();
  private readonly onEvent = (e: EventRow) => this.handleEvent(e);

  /**
   * @param fleet this runner's identity in a fleet (PostgreSQL store): it then claims only what it can
   *   run, under the fleet-wide limits (scheduler/fleet.ts); absent on one host.
   */
  constructor(
    private readonly engine: LeaderEngine,
    private readonly runnerId: string,
    hooks: LeaderHooks,
    private readonly fleet: FleetIdentity | null = null,
  ) {
    super();
    this.hooks = requireLeaderHooks(hooks);
    this.memory = new MemoryGate(engine, runnerId, () => this.wake());
    this.claimBackoff = new ClaimBackoff(() => this.wake());
    this.sealed = new ForeignSeals(() => engine.db, engine.home.root, (m) => this.emit('notice', m));
  }

  /** Memory admission ([scheduler] min_free_mib) and the workers' measured footprints. */
  private readonly memory: MemoryGate;
  private readonly claimBackoff: ClaimBackoff;
  private readonly sealed: ForeignSeals;

  private readonly hooks: LeaderHooks;

  get runningCount(): number {
    return this.running.size;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** The tasks this process runs now (id, name, worker), oldest first. */
  runningTasks(): RunningTask[] {
    return [...this.running.values()].map(({ id, name, worker }) => ({ id, name, worker }));
  }

  /**
   * Stop claiming new tasks (a graceful shutdown) while the running ones go on; unlike pause() it is
   * not persisted, so the next leader claims as usual. Emits 'drained' once nothing runs.
   */
  drain(): void {
    this.draining = true;
    if (this.running.size === 0) this.emit('drained');
  }

  /**
   * Claim nothing new while `reason` is set (the store cannot be written: a task started now could not record
   * its end either); running tasks go on. `null` lifts the hold.
   */
  holdClaims(reason: string | null): void {
    this.held = reason;
    if (reason === null) this.wake();
  }

  /** A store error met outside a task's own bookkeeping: a full or damaged store is told to the service. */
  private noteStoreError(err: unknown): void {
    if (storeFaultOf(err, this.engine.home.root)) this.emit('store.fault', err);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stopSignal = new AbortController();
    this.paused = getSetting<boolean>(this.engine.db, 'scheduler.paused') ?? false;
    this.engine.watch();
    this.engine.events.on('event', this.onEvent);
    // New limits (config.toml reloaded) may let a queued task start now.
    this.engine.events.on('config', this.onConfig);
    this.hooks.team.onStart(this.engine);
    this.wake();
  }

  private readonly onConfig = (): void => this.wake();

  pause(): void {
    this.paused = true;
    this.engine.write(() => setSetting(this.engine.db, 'scheduler.paused', true));
  }

  resume(): void {
    this.paused = false;
    this.engine.write(() => setSetting(this.engine.db, 'scheduler.paused', false));
    this.wake();
  }

  /**
   * Stop claiming. With `abortReason`, kill what runs and wait for it to settle. With `killNow`, the
   * trees get SIGKILL at once instead of SIGTERM + grace (a hard deadline such as `run --timeout`).
   */
  async stop(abortReason?: 'shutdown' | 'leader_lost' | 'timeout', opts: { killNow?: boolean; trees?: Tree[] } = {}): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    this.engine.events.off('event', this.onEvent);
    this.engine.events.off('config', this.onConfig);
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.memory.stop();
    this.claimBackoff.stop();
    if (abortReason) for (const r of this.running.values()) r.controller.abort(abortReason);
    if (abortReason && opts.killNow) await this.killNow(opts.trees);
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  /**
   * SIGKILL, without a grace, what each running task has left: the group of the process recorded on it
   * (the worker, or the verify command running now), that process's descendants and, on Linux, every
   * process carrying the attempt's marker. Call after aborting (stop), so each run records why it ended.
   * `trees`: read before (treesOfRunning) when the store is about to be closed.
   */
  async killNow(trees = this.treesOfRunning()): Promise<void> {
    if (trees.length) await sweepTrees(trees, 0);
  }

  /** What each running task has left to kill, as the store records it (its marker alone when it cannot be read). */
  treesOfRunning(): Tree[] {
    const trees: Tree[] = [];
    for (const r of this.running.values()) {
      let t: ReturnType<typeof getTask> = null;
      try {
        t = getTask(this.engine.db, r.id);
      } catch {
        // The store is gone (the reason for killing now, often): the attempt's marker still finds its processes.
      }
      // Only this runner's own attempt: once the task is another's (orphaned, retried elsewhere), its pid is not ours.
      const ours = t !== null && t.attempt === r.attempt && t.runnerId === this.runnerId;
      trees.push(taskTree(this.engine.home.root, { id: r.id, attempt: r.attempt, pid: ours ? t!.pid : null, pidStart: ours ? t!.pidStart : null }));
    }
    return trees;
  }

  /** Abort every running task with `reason` (e.g. `run --timeout`), without stopping. */
  abortAll(reason: 'timeout' | 'cancel' | 'shutdown'): void {
    for (const r of this.running.values()) r.controller.abort(reason);
  }

  wake(): void {
    if (this.wakeQueued || this.stopped) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      try {
        this.dispatch();
      } catch (err) {
        // The store failed this pass (a dropped connection, a busy file, a full disk): try again shortly
        // rather than crash a runner with tasks in flight.
        this.noteStoreError(err);
        setTimeout(() => this.wake(), 500).unref();
      }
    });
  }

  private handleEvent(e: EventRow): void {
    try {
      this.reactTo(e);
    } catch (err) {
      this.noteStoreError(err);
      // The store failed while reacting (a dropped connection, a busy file): look again shortly.
      setTimeout(() => this.wake(), 500).unref();
    }
  }

  private reactTo(e: EventRow): void {
    if (e.type === 'task.cancel_requested' && e.taskId) {
      const run = this.running.get(e.taskId);
      if (run) run.controller.abort('cancel');
      else this.endUnrun(e.taskId);
      return;
    }
    if (e.type === 'task.status' && e.taskId && TERMINAL.has(e.payload.to as TaskStatus)) this.hooks.team.onEnded(this.engine, e.taskId);
    if (e.type === 'task.created' || e.type === 'task.status') this.wake();
  }

  /**
   * A cancel request for a task this runner owns but no longer runs (its run ended and the end could not
   * be written, the store full or away): nothing else would end it, so it is cancelled here, fenced to
   * the attempt this runner claimed.
   */
  private endUnrun(id: string): void {
    const t = getTask(this.engine.db, id);
    if (!t || t.runnerId !== this.runnerId || !['starting', 'running', 'verifying'].includes(t.status)) return;
    this.engine.write(() =>
      move(this.engine.db, id, t.status, 'cancelled', { reason: 'cancelled on request (its run had ended unrecorded)', fields: { errorCode: 'cancelled', errorMessage: 'cancelled on request', pid: null }, fence: { attempt: t.attempt, runnerId: this.runnerId } }),
    );
  }

  /**
   * Workers that cannot take work now: per-worker concurrency, pauses (a rate limit, an open breaker) and a
   * half-open breaker whose one probe task is running; `gateways` gets the gateways that cannot, the same way.
   */
  private unavailableWorkers(now: number, gateways: string[] = []): string[] {
    const out: string[] = [];
    let nextWake = Infinity;
    for (const [name, n] of this.perGateway) if (n > 0 && isHalfOpen(this.engine.db, this.engine.config, gatewayKey(name), now)) gateways.push(name);
    for (const { gateway, pause } of activeGatewayPauses(this.engine.db, now)) {
      gateways.push(gateway);
      nextWake = Math.min(nextWake, pause.until);
    }
    for (const [name, n] of this.perWorker) {
      try {
        if (n >= resolveAdapter(this.engine, name).maxConcurrency) out.push(name);
        else if (n > 0 && isHalfOpen(this.engine.db, this.engine.config, name, now)) out.push(name);
      } catch {
        // unknown worker: its tasks fail fast when claimed
      }
    }
    for (const { worker, pause } of activePauses(this.engine.db, now)) {
      out.push(worker);
      nextWake = Math.min(nextWake, pause.until);
    }
    // Wake when the first pause ends (a new, shorter one moves the timer earlier).
    if (nextWake !== Infinity && (!this.pauseTimer || nextWake < this.pauseTimerAt)) {
      if (this.pauseTimer) clearTimeout(this.pauseTimer);
      this.pauseTimerAt = nextWake;
      this.pauseTimer = setTimeout(() => {
        this.pauseTimer = null;
        this.wake();
      }, nextWake - now + 5);
      this.pauseTimer.unref();
    }
    return out;
  }

  private dispatch(): void {
    if (this.stopped || this.paused || this.draining || this.held !== null) return;
    const { scheduler } = this.engine.config;
    const limits = { perRoot: scheduler.per_root, perRepository: scheduler.per_repository };
    this.memory.beginPass();
    // Bounded: a claim lost to another runner lists again, but a pass never spins. A task this pass could
    // not take (another claim holds its row, or its root or repository is at its limit) is not picked again
    // in it, so one held row never hides the rest of the queue.
    const passed = new Set<string>();
    for (let tries = 0; this.running.size < scheduler.max_concurrency && tries < scheduler.max_concurrency * 4 + 8; tries++) {
      const now = Date.now();
      const gateways: string[] = [];
      const excluded = [...this.unavailableWorkers(now, gateways), ...this.memory.blocked];
      // A tree one of whose tasks waits for a person to raise its total starts nothing meanwhile.
      const more = { roots: [...new Set([...rootBudgetWaits(this.engine.db).map((w) => w.rootId), ...crossedRoots()])], gateways };
      const cands: Candidate[] = this.fleet ? listFleetCandidates(this.engine.db, this.fleet, limits, excluded, [...this.sealed.ids(), ...passed], 64, more) : listCandidates(this.engine.db, limits, excluded, 64, more);
      const pick = pickCandidate(passed.size ? cands.filter((c) => !passed.has(c.id)) : cands, this.lastDispatch, this.affinity);
      if (!pick) break;
      if (this.fleet && this.sealed.leaves(pick.id)) continue;
      // Too little memory for this worker now: its tasks are left out of this pass (and say why).
      if (!this.memory.admit(pick.worker)) continue;
      const claimed = this.fleet
        ? this.engine.write(() => claimFleetTask(this.engine.db, pick as FleetCandidate, this.fleet!, this.runnerId, fleetLimitsOf(this.engine.config), now))
        : this.engine.write(() => claimTask(this.engine.db, pick.id, this.runnerId, now)) ? 'claimed' : 'taken';
      if (claimed === 'fleet_full') break;
      if (claimed === 'lost') {
        // The fleet counts this runner lost: claim nothing; the service stops what runs and joins again.
        this.emit('runner.lost');
        break;
      }
      if (claimed !== 'claimed') {
        if (claimed === 'busy') this.claimBackoff.soon();
        passed.add(pick.id);
        continue;
      }
      this.claimBackoff.reset();
      this.memory.started(pick.id, pick.worker);
      this.memory.clearWait(pick.worker);
      this.lastDispatch.set(pick.rootId, ++this.dispatchSeq);
      this.affinity = pick.cohort && pick.cohort === this.affinity.cohort ? { cohort: pick.cohort, streak: this.affinity.streak + 1 } : { cohort: pick.cohort, streak: 1 };
      this.launch(pick.id, pick.worker, pick.rootId);
    }
    this.memory.endPass();
    if (this.running.size === 0) this.emit('idle');
  }

  private launch(id: string, worker: string, rootId: string): void {
    const controller = new AbortController();
    const task = getTask(this.engine.db, id);
    const timer = setTimeout(() => controller.abort('timeout'), (task?.timeoutS ?? 1800) * 1000);
    timer.unref();
    if (task?.cancelRequested) controller.abort('cancel');
    this.perWorker.set(worker, (this.perWorker.get(worker) ?? 0) + 1);
    const gateway = task?.gateway ?? null;
    if (gateway) this.perGateway.set(gateway, (this.perGateway.get(gateway) ?? 0) + 1);
    const done = runTask(
      {
        engine: this.engine,
        runnerId: this.runnerId,
        host: this.fleet?.host ?? null,
        signal: controller.signal,
        killGraceMs: this.engine.config.scheduler.kill_grace_ms,
        onRateLimit: rateLimitHook(this.engine, task ?? null, id, gateway),
        ...breakerHooks(this.engine, gateway),
        onPlan: (t, r) => this.hooks.plan(this.engine, t, r),
        teamInputs: (t) => this.hooks.team.inputsFor(this.engine, t),
        stopped: this.stopSignal.signal,
        endsWaiting: this.endsWaiting,
        onStoreFault: (err) => this.emit('store.fault', err),
      },
      id,
    );
    // `done` as the scheduler sees it: settled only after the end's bookkeeping below, so a stop()
    // awaiting it never closes the store under that bookkeeping (seen as "store … is closed" on exit).
    const settled = done
      .catch((err: unknown) => {
        this.noteStoreError(err);
        return 'failed' as TaskStatus;
      })
      .then((status) => {
        clearTimeout(timer);
        this.running.delete(id);
        this.perWorker.set(worker, Math.max(0, (this.perWorker.get(worker) ?? 1) - 1));
        if (gateway) this.perGateway.set(gateway, Math.max(0, (this.perGateway.get(gateway) ?? 1) - 1));
        if (this.stopped && !this.engine.db.open) return status;
        try {
          this.memory.ended(id, worker);
          // In the same tick as the task's end: `run --until-idle` must not see the team idle before its next step.
          this.hooks.team.onEnded(this.engine, id);
        } catch (err) {
          this.noteStoreError(err);
          // The store failed just now: the team steps on at its next event (the driver re-reads state).
        }
        this.emit('task.ended', id, status);
        if (this.draining && this.running.size === 0) this.emit('drained');
        this.wake();
        return status;
      });
    this.running.set(id, { id, name: task?.name ?? id, worker, rootId, gateway, attempt: task?.attempt ?? 0, controller, timer, done: settled });
  }
}
