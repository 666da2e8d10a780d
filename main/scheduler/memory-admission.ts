import type { Db } from '../store/db.js';
import { deleteSetting, getSetting, setSetting } from '../store/settings.js';
import { getTask } from '../store/tasks.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { availableMib, treeRssMib } from '../platform/proc/memory.js';

/** A worker's typical footprint: a moving value of the peak resident MiB of its runs' process trees. */
interface Footprint {
  mib: number;
  runs: number;
  lastPeak: number;
}

/** Why a worker's tasks wait for memory, as the leader last saw it (kept for other processes' `show`). */
interface MemoryWait {
  reason: string;
  at: number;
}

const FOOTPRINT_PREFIX = 'scheduler.footprint.';
const MEMORY_WAIT_PREFIX = 'scheduler.memory_wait.';
/** How often the leader samples its running workers' trees, and looks again while a task waits for memory. */
const SAMPLE_MS = 1000;
/** A wait reason is rewritten at most this often while it lasts, and read as current for twice that. */
const WAIT_REFRESH_MS = 10_000;

/** The worker's typical footprint in MiB (0 until one of its runs was measured). */
export function footprintOf(db: Db, worker: string): number {
  return getSetting<Footprint>(db, FOOTPRINT_PREFIX + worker)?.mib ?? 0;
}

/** A run's peak: moves the worker's value a third of the way to it (a first run sets it). In the caller's transaction. */
export function noteFootprint(db: Db, worker: string, peakMib: number): void {
  const prev = getSetting<Footprint>(db, FOOTPRINT_PREFIX + worker);
  const mib = prev ? Math.round(prev.mib + (peakMib - prev.mib) / 3) : Math.round(peakMib);
  setSetting(db, FOOTPRINT_PREFIX + worker, { mib, runs: (prev?.runs ?? 0) + 1, lastPeak: Math.round(peakMib) } satisfies Footprint);
}

/** "waiting for memory: …" for a queued task of `worker`, while the leader holds it back (else null). */
export function memoryWaitReason(db: Db, worker: string, now = Date.now()): string | null {
  const w = getSetting<MemoryWait>(db, MEMORY_WAIT_PREFIX + worker);
  return w && now - w.at < 2 * WAIT_REFRESH_MS ? w.reason : null;
}

/**
 * The leader's memory admission ([scheduler] min_free_mib; 0: off): a worker is started only while the
 * machine's available memory, less what the workers started in the same pass are expected to take, stays
 * above the floor plus the worker's typical footprint. It also measures that footprint: every running task's
 * process tree is sampled each second, and its peak noted when the run ends.
 */
export class MemoryGate {
  #free: number | null = null;
  #reserved = 0;
  readonly #blocked = new Map<string, string>();
  readonly #peaks = new Map<string, number>();
  #sampler: NodeJS.Timeout | null = null;
  #recheck: NodeJS.Timeout | null = null;

  /** `runnerId`: the runner whose runs it samples (a task now another's is not measured). */
  constructor(
    private readonly engine: EngineContext,
    private readonly runnerId: string,
    private readonly wake: () => void,
  ) {}

  private pidOf(taskId: string): number | null {
    const t = getTask(this.engine.db, taskId);
    return t && t.runnerId === this.runnerId ? t.pid : null;
  }

  /** A dispatch pass starts: memory is read once, at the first worker it is asked about. */
  beginPass(): void {
    this.#free = null;
    this.#reserved = 0;
    this.#blocked.clear();
  }

  /** Workers held back in this pass (their tasks are left out of the claim). */
  get blocked(): string[] {
    return [...this.#blocked.keys()];
  }

  /** May a task of `worker` start now? When not, the worker is held back for the rest of the pass. */
  admit(worker: string): boolean {
    const floor = this.engine.config.scheduler.min_free_mib;
    if (floor === 0) return true;
    this.#free ??= availableMib();
    const need = footprintOf(this.engine.db, worker);
    const free = this.#free - this.#reserved;
    if (free >= floor + need) return true;
    this.#blocked.set(worker, `waiting for memory: ${free} MiB free, ${worker} needs ~${need} MiB + ${floor} reserved ([scheduler] min_free_mib)`);
    return false;
  }

  /** A task of `worker` was claimed: what it will take is counted against this pass. */
  started(taskId: string, worker: string): void {
    if (this.engine.config.scheduler.min_free_mib !== 0) this.#reserved += footprintOf(this.engine.db, worker);
    this.#peaks.set(taskId, 0);
    this.#sampler ??= setInterval(() => this.#sample(), SAMPLE_MS);
    this.#sampler.unref();
  }

  /** The pass ended: say why held-back workers wait (other processes read it), clear what no longer waits, look again soon. */
  endPass(): void {
    const now = Date.now();
    const db = this.engine.db;
    for (const [worker, reason] of this.#blocked) {
      const prev = getSetting<MemoryWait>(db, MEMORY_WAIT_PREFIX + worker);
      if (!prev || now - prev.at >= WAIT_REFRESH_MS) this.engine.write(() => setSetting(db, MEMORY_WAIT_PREFIX + worker, { reason, at: now } satisfies MemoryWait));
    }
    if (this.#blocked.size && !this.#recheck) {
      this.#recheck = setTimeout(() => {
        this.#recheck = null;
        this.wake();
      }, SAMPLE_MS);
      this.#recheck.unref();
    }
  }

  /** A task of `worker` was admitted: its worker no longer waits for memory. */
  clearWait(worker: string): void {
    const db = this.engine.db;
    if (getSetting<MemoryWait>(db, MEMORY_WAIT_PREFIX + worker)) this.engine.write(() => deleteSetting(db, MEMORY_WAIT_PREFIX + worker));
  }

  /**
   * The run ended: its peak (when one was measured) moves its worker's footprint. No last sample: the run
   * settles only after its worker's tree has exited (and its verification and custody check ran), so one
   * would read a gone process, at a store read and two /proc look-ups per task.
   */
  ended(taskId: string, worker: string): void {
    const peak = this.#peaks.get(taskId) ?? 0;
    this.#peaks.delete(taskId);
    if (peak > 0) this.engine.write(() => noteFootprint(this.engine.db, worker, peak));
    if (this.#peaks.size === 0 && this.#sampler) {
      clearInterval(this.#sampler);
      this.#sampler = null;
    }
  }

  stop(): void {
    if (this.#sampler) clearInterval(this.#sampler);
    if (this.#recheck) clearTimeout(this.#recheck);
    this.#sampler = this.#recheck = null;
  }

  #sample(): void {
    for (const id of this.#peaks.keys()) this.#sampleOne(id);
  }

  #sampleOne(taskId: string): void {
    try {
      const pid = this.pidOf(taskId);
      if (pid && pid > 0) this.#peaks.set(taskId, Math.max(this.#peaks.get(taskId) ?? 0, treeRssMib(pid)));
    } catch {
      // the store is busy or closed this second: the next sample counts
    }
  }
}
