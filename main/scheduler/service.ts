import { EventEmitter } from 'node:events';
import { AppError } from '../core/errors.js';
import { newToken } from '../core/ids.js';
import type { LeaderEngine } from '../store/engine-handle.js';
import { limitStoreCalls, storeCapabilities } from '../store/capabilities.js';
import { anchorChains, anchorDue, latestSeq } from '../store/events.js';
import { fleetIdentity, registerRunner, renewRunner, stopRunner, type FleetIdentity } from './fleet.js';
import { releaseLease, renewLease, tryAcquireLease } from '../store/leases.js';
import { readServiceStatus } from './service-status.js';
import { claimableWork } from '../store/work-counts.js';
import { claimSpawn, RESPAWN_MS, runnerWanted } from './spawn-gate.js';
import { recoverLostRunners, recoverOrphans, sweepLostOnHost } from './recovery.js';
import { sweepExpiredRequests } from './request-expiry.js';
import { sweepPullRequests } from './pull-sweep.js';
import { sweepRetention } from './retention-sweep.js';
import { sweepDeadSnapshots } from '../isolation/snapshot-sweep.js';
import { Scheduler, type RunningTask } from './scheduler.js';
import type { Tree } from '../platform/proc/sweep.js';
import { requireLeaderHooks, type LeaderHooks } from './leader-hooks.js';
import { storeDamagedError, storeFaultOf } from '../store/store-faults.js';
import { StoreHealth } from './store-health.js';
import { RunnerFence } from './runner-fence.js';
import type { SchedulerService, SchedulerStatus, ServiceOptions } from './service-types.js';

export type { RunningTask, SchedulerService, SchedulerStatus, ServiceOptions };

/** How often a leader (every fleet runner) ties the event chains' heads into the next anchor (docs/audit.md). */
const ANCHOR_EVERY_MS = 10_000;

/**
 * Run the scheduler for this home: lead if nobody does (a lease row with heartbeat), else stand by and
 * take over once the leader's lease expires or its process is provably dead. On takeover, tasks of the
 * old leader are recovered as orphaned (their process trees killed) before anything new is claimed.
 * Emits 'status' whenever role or counts change, 'leader' / 'standby' on role changes ('lease.lost' first when the lease was lost while leading), 'task.ended'
 * (id, status) after each run of this process, 'drained' once a drain() left nothing running, 'trouble'
 * (message) when beats keep failing (the store unreachable) and 'recovered' when one works again, 'fatal'
 * (error) when the store is closed for good (its connection thread stopped answering) or damaged (the
 * SQLite file deleted, replaced, truncated, failing quick_check or SQLite's own checks: store-health.ts):
 * the service then stops itself, killing what runs, and the face says why (and exits, where it is a
 * command). A full file system is no stop: 'trouble' says what is full and where (once), 'store.full'
 * (AppError) starts the spell, during which nothing new is claimed and task ends are retried, and
 * 'store.writable' (message) ends it. `hooks`: what the leader does with plans and teams (main/app.ts).
 */
export async function startService(engine: LeaderEngine, hooks: LeaderHooks, opts: ServiceOptions = {}): Promise<SchedulerService> {
  const svc = new Service(engine, requireLeaderHooks(hooks), opts);
  await svc.tick();
  return svc;
}

function newHolder(): string {
  return `${process.pid}-${newToken(6)}`;
}

class Service extends EventEmitter implements SchedulerService {
  /** Our lease holder id; in a fleet, our runner id (a new one after a lost lease). */
  holder = newHolder();
  /** Set on the PostgreSQL store: this process is one runner of a fleet, not a leader of one home. */
  private readonly fleet: FleetIdentity | null;
  private leaseLost = false;
  scheduler: Scheduler | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private stopping: Promise<void> | null = null;
  private draining = false;
  private becoming = false;
  private readonly ttl: number;
  private readonly health: StoreHealth;
  // status() counts tasks: only pay for it when someone listens (the tray does; `run` does not).
  private readonly onChange = () => {
    if (this.listenerCount('status')) this.emit('status', this.status());
  };

  constructor(
    private readonly engine: LeaderEngine,
    private readonly hooks: LeaderHooks,
    private readonly opts: ServiceOptions,
  ) {
    super();
    this.fleet = storeCapabilities(engine.db).sharedByHosts ? fleetIdentity(engine.config) : null;
    this.ttl = this.fleet ? engine.config.fleet.lease_ttl_ms : engine.config.scheduler.lease_ttl_ms;
    this.health = new StoreHealth(engine);
    engine.watch();
    engine.events.on('change', this.onChange);
    this.fence = this.fleet ? new RunnerFence(this.ttl, (r, message) => void this.selfFenced(r.killed === null, message).catch((err) => this.trouble(err))) : null;
    this.schedule();
  }

  /** Our workers must be dead before our lease can expire, even if this process cannot run (fleet only). */
  private readonly fence: RunnerFence | null;

  /** Our trees were killed (no renewal in time; `killOwn`: by us, no helper): stop as a lost runner would, and join again. */
  private async selfFenced(killOwn: boolean, message: string): Promise<void> {
    if (!this.scheduler || this.stopped) return;
    if (this.listenerCount('trouble')) this.emit('trouble', message);
    const old = this.holder;
    if (killOwn) await this.scheduler.killNow();
    await this.loseLeadership();
    // The store away: the fleet marks the old id lost when its lease expires.
    await Promise.resolve().then(() => this.engine.write(() => stopRunner(this.engine.db, old))).catch(() => undefined);
  }

  /** When our last heartbeat was written; whether the last beat failed (the store busy). */
  private beatAt = 0;
  private beatFailed = false;

  /**
   * The next beat. A leader beats every ttl/4 from its last written heartbeat (not from the end of the work
   * a beat did), 50 ms after a failed one: a late beat never pushes the next ones later still.
   */
  private schedule(): void {
    if (this.stopped) return;
    let every = this.opts.standbyPollMs ?? 250;
    if (this.scheduler) {
      const period = Math.max(100, Math.floor(this.ttl / 4));
      every = this.beatFailed ? 50 : Math.max(10, Math.min(period, this.beatAt + period - Date.now()));
    }
    // A failed beat (the store unreachable for a moment) is retried at the next one, never an unhandled rejection.
    this.timer = setTimeout(() => void this.tick().catch((err) => this.trouble(err)).finally(() => this.schedule()), every);
    this.timer.unref();
  }

  /** Heartbeat as leader, or try to take over as standby. */
  async tick(): Promise<void> {
    if (this.stopped || this.becoming) return;
    try {
      this.health.check(false, Date.now(), this.scheduler !== null);
    } catch (err) {
      this.trouble(err);
      return;
    }
    if (this.scheduler) {
      let ok = false;
      try {
        [this.beatAt, this.beatFailed] = [Date.now(), false];
        ok = this.fleet ? renewRunner(this.engine.db, this.holder, this.ttl, this.beatAt) : renewLease(this.engine.db, this.holder, this.ttl);
        if (ok) this.fence?.renewed(this.beatAt);
      } catch (err) {
        this.beatFailed = true;
        this.trouble(err); // database busy: try again in a moment; the lease has slack
        return;
      }
      if (!ok) await this.loseLeadership();
      else {
        try {
          sweepExpiredRequests(this.engine);
          void sweepPullRequests(this.engine)?.catch((err) => this.trouble(err));
          void sweepRetention(this.engine)?.catch((err) => this.trouble(err));
          if (this.fleet) await recoverLostRunners(this.engine, this.holder, this.fleet.host);
          this.anchorIfDue();
          this.fine();
        } catch (err) {
          this.trouble(err); // database busy: the next beat sweeps again
        }
      }
      return;
    }
    if (this.draining) return;
    if (this.opts.spawnRunner) {
      this.maybeSpawnRunner();
      return;
    }
    if (this.opts.onlyWithWork) {
      const work = claimableWork(this.engine.db);
      if (work.active + work.runnable === 0) return;
    }
    let won = false;
    try {
      won = this.fleet ? this.joinFleet(this.fleet) : tryAcquireLease(this.engine.db, this.holder, this.ttl);
      if (!won) this.fine();
    } catch (err) {
      this.trouble(err);
      won = false;
    }
    if (!won) return;
    this.beatAt = Date.now();
    this.fence?.renewed(this.joinedAt);
    this.becoming = true;
    try {
      if (this.fleet) {
        await sweepLostOnHost(this.engine, this.fleet.host);
        await recoverLostRunners(this.engine, this.holder, this.fleet.host);
      } else await recoverOrphans(this.engine, this.holder, this.engine.config.scheduler.kill_grace_ms);
      // Read-only snapshots the dead runner held; off the path to leading (prune removes them otherwise).
      setImmediate(() => {
        try {
          sweepDeadSnapshots(this.engine);
        } catch {
          // the engine closed meanwhile, or the database is busy: prune removes them later
        }
      });
      if (this.stopped || this.draining) {
        // A shutdown began while we were taking over: give the lease back instead of leading.
        this.release();
        if (!this.stopped) this.emit('drained');
        return;
      }
      this.scheduler = new Scheduler(this.engine, this.holder, this.hooks, this.fleet);
      this.engine.setWriteBeat(() => (this.fence ? this.fence.renewInWrite(this.engine.db, this.holder, this.beatAt, (at) => (this.beatAt = Math.max(this.beatAt, at))) : this.beatInWrite()));
      this.scheduler.on('drained', () => this.emit('drained'));
      this.scheduler.on('task.ended', (id: string, status: string) => this.emit('task.ended', id, status));
      this.scheduler.on('store.fault', (err: unknown) => this.trouble(err));
      this.scheduler.on('notice', (message: string) => this.emit('notice', message));
      this.scheduler.on('runner.lost', () => setImmediate(() => void this.loseLeadership().catch((err) => this.trouble(err))));
      if (this.health.full) this.scheduler.holdClaims(this.health.full.error.message);
      this.scheduler.start();
      if (this.opts.paused) this.scheduler.pause();
      this.emit('leader');
      this.emit('status', this.status());
      this.fine();
    } catch (err) {
      // Recovery failed this beat (the store dropped a connection, a busy file): try again next beat; in a
      // fleet under a new runner id (this one's row expires unused).
      if (this.fleet) this.leaseLost = true;
      this.trouble(err);
    } finally {
      this.becoming = false;
    }
  }

  private failedBeats = 0;
  private troubleSaid: string | null = null;

  /**
   * A beat failed. One failure is routine (a busy file, a dropped connection replaced at the next call);
   * the second in a row is said ('trouble', once per distinct message), so a runner that cannot work is
   * never silent. A store closed for good is 'fatal' at once: the service stops, killing what runs (nothing
   * here can record or watch it any more), and every face only says so (`svc.stop()` awaits that stop).
   */
  private trouble(err: unknown): void {
    const fault = storeFaultOf(err, this.engine.home.root);
    if (fault === 'full') return this.storeFull(err);
    if (fault === 'damaged' && !(err instanceof AppError)) err = storeDamagedError(this.engine.home.db, `failed a read or write: ${(err as Error).message}`);
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof AppError && err.details?.closed) {
      if (this.stopping) return;
      // A damaged store is closed at once, its tasks' trees read first: nothing more is written into it.
      const damaged = err.code === 'store_damaged';
      const trees = damaged ? this.scheduler?.treesOfRunning() : undefined;
      if (damaged) this.engine.closeStoreFor(err);
      void this.stop({ killNow: true, trees }).catch(() => undefined);
      // Emitted on the next turn: the first beat runs inside startService, before any face listens.
      setImmediate(() => this.emit('fatal', err));
      return;
    }
    if (++this.failedBeats < 2 || message === this.troubleSaid) return;
    this.troubleSaid = message;
    if (this.listenerCount('trouble')) this.emit('trouble', message);
  }

  /** A write found no space: claim nothing new, and say what is full and where (once a spell). */
  private storeFull(err: unknown): void {
    const said = this.health.noteFull(err);
    this.scheduler?.holdClaims(this.health.full!.error.message);
    if (!said) return;
    this.troubleSaid = said;
    const error = this.health.full!.error;
    // On the next turn, like 'fatal': the first beat runs before any face listens.
    setImmediate(() => {
      if (this.listenerCount('trouble')) this.emit('trouble', said, { full: true });
      this.emit('store.full', error);
    });
  }

  /** A beat worked: a trouble said before is over (a full spell only once the store takes writes again). */
  private fine(): void {
    this.failedBeats = 0;
    if (this.health.full) {
      const back = this.health.recoveredFrom(this.scheduler?.endsWaiting.size ?? 0);
      if (!back) return;
      this.scheduler?.holdClaims(null);
      this.emit('store.writable', back);
    }
    if (this.troubleSaid === null) return;
    this.troubleSaid = null;
    this.emit('recovered');
  }

  private anchoredAtSeq = -1;

  /**
   * Anchor the chain heads when it is due and events were written since the last look: a heartbeat of
   * an idle leader costs one indexed read, and no write lock (anchors write no events themselves).
   */
  private anchorIfDue(): void {
    const db = this.engine.db;
    const seq = latestSeq(db);
    if (seq === this.anchoredAtSeq || !anchorDue(db, Date.now(), ANCHOR_EVERY_MS)) return;
    anchorChains(db);
    this.anchoredAtSeq = seq;
  }

  /** When we last registered (our lease's start until the first renewal). */
  private joinedAt = 0;
  /** Register as a runner of the fleet (a fresh runner id after a lost lease: the old one's tasks are orphaned). */
  private joinFleet(me: FleetIdentity): boolean {
    if (this.leaseLost) {
      this.holder = newHolder();
      this.leaseLost = false;
    }
    this.joinedAt = Date.now();
    this.engine.write(() => registerRunner(this.engine.db, this.holder, me, this.engine.config.scheduler.max_concurrency, this.ttl, this.joinedAt));
    return true;
  }

  private release(): void {
    try {
      if (this.fleet) stopRunner(this.engine.db, this.holder);
      else releaseLease(this.engine.db, this.holder);
    } catch {
      // the lease expires on its own
    }
  }

  private lastSpawn = 0;

  /** Delegating mode: start a background runner when there is work and no live leader. */
  private maybeSpawnRunner(): void {
    const now = Date.now();
    if (now - this.lastSpawn < RESPAWN_MS) return;
    if (!runnerWanted(this.engine.db, this.fleet?.host ?? null, now)) return;
    this.lastSpawn = now;
    if (!claimSpawn(this.engine.db, now)) return;
    this.opts.spawnRunner!();
    this.emit('spawned');
  }

  /** A heartbeat inside one of this leader's own write transactions (LeaderEngine.setWriteBeat). */
  private beatInWrite(): void {
    if (renewLease(this.engine.db, this.holder, this.ttl)) this.beatAt = Date.now();
  }

  private async loseLeadership(): Promise<void> {
    const s = this.scheduler;
    this.scheduler = null;
    this.engine.setWriteBeat(null);
    this.leaseLost = true;
    this.emit('lease.lost');
    this.fence?.clear();
    // Someone else leads now and will orphan our tasks (in a fleet: did already); kill what we started so nothing runs twice.
    await s?.stop('leader_lost');
    this.emit('standby');
    this.emit('status', this.status());
    if (this.draining) this.emit('drained');
  }

  status(): SchedulerStatus {
    return readServiceStatus(this.engine.db, { holder: this.holder, fleet: this.fleet, leading: this.scheduler !== null, paused: this.scheduler?.isPaused ?? false });
  }

  runningTasks(): RunningTask[] {
    return this.scheduler?.runningTasks() ?? [];
  }

  drain(): void {
    this.draining = true;
    limitStoreCalls(this.engine.db);
    if (this.scheduler) this.scheduler.drain();
    else if (!this.becoming) this.emit('drained');
  }

  pause(): void {
    this.scheduler?.pause();
    this.emit('status', this.status());
  }

  resume(): void {
    this.scheduler?.resume();
    this.emit('status', this.status());
  }

  stop(opts: { killNow?: boolean; trees?: Tree[] } = {}): Promise<void> {
    // A stop already under way (SIGTERM + grace) turns into an immediate kill when asked (a deadline).
    if (this.stopping && opts.killNow) void this.stoppingScheduler?.killNow();
    this.stopping ??= this.stopOnce(opts);
    return this.stopping;
  }

  private stoppingScheduler: Scheduler | null = null;

  private async stopOnce(opts: { killNow?: boolean; trees?: Tree[] }): Promise<void> {
    this.stopped = true;
    limitStoreCalls(this.engine.db);
    if (this.timer) clearTimeout(this.timer);
    this.engine.events.off('change', this.onChange);
    const s = this.scheduler;
    this.scheduler = null;
    this.engine.setWriteBeat(null);
    this.stoppingScheduler = s;
    if (s) {
      await s.stop('shutdown', opts);
      try {
        anchorChains(this.engine.db);
      } catch {
        // the next leader anchors
      }
      this.release();
    }
    this.fence?.close();
  }
}
