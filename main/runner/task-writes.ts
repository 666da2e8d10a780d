import { isAppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent, withEventFence } from '../store/events.js';
import type { Fence } from '../store/fence.js';
import { updateRunFields } from '../store/fence.js';
import type { Task } from '../tasks/types.js';
import { storeFaultOf } from '../store/store-faults.js';
import type { NormalizedEvent, ThreadUsage } from '../workers/adapter.js';
import type { DroppedOutput, OutputBudget } from './output-budget.js';
import type { RawLogDropped } from './turn.js';
import { latestUsageOfThread } from '../store/task-history.js';
import { addUsageTotals } from '../store/task-moves.js';

// What a task's run writes besides its state moves: the deferred writes of runner/run-task.ts, and a worker
// turn's events with the token counts they carry.

const TEXT_CAP = 4000;

/**
 * A task's writes that can ride in its next transaction (a fast read-only task commits 3 times, not 7: count the commits in a drain, npm run bench).
 * `write` replays them, in order, first inside that transaction, and forgets them once it committed; an
 * end that comes before any such transaction (a failed spawn, a cancel) writes them in its own.
 */
export class Deferred {
  private fns: { fn: () => void; record: boolean }[] = [];
  /**
   * `record`: a record of what happened (events, the prompt) that must be written even when a state move
   * deferred with it can no longer be (someone else moved the task): see flush.
   */
  readonly add = (fn: () => void, opts: { record?: boolean } = {}): void => {
    this.fns.push({ fn, record: opts.record ?? true });
  };

  /** `fn` in a transaction, after what is deferred (ordered after it): a writer for code that takes one. */
  readonly writer = (engine: EngineContext) => <T>(fn: () => T): T => this.write(engine, fn);

  write<T>(engine: EngineContext, fn: () => T): T {
    const fns = this.fns;
    const out = engine.write(() => {
      for (const f of fns) f.fn();
      return fn();
    });
    this.fns = [];
    return out;
  }

  /**
   * Write what is still deferred (ends other than completion). When a deferred state move fails (the task was
   * moved by someone else, whose state stands), the records alone are written: nothing the worker did is lost.
   */
  flush(engine: EngineContext): void {
    if (!this.fns.length) return;
    try {
      this.write(engine, () => undefined);
    } catch (err) {
      if (!isAppError(err)) throw err;
      const records = this.fns.filter((f) => f.record);
      this.fns = [];
      if (!records.length) return;
      try {
        engine.write(() => records.forEach((f) => f.fn()));
      } catch (e) {
        if (!isAppError(e)) throw e;
      }
    }
  }
}

/**
 * `engine` for one attempt's run: each of its transactions writes the task's events only while `fence`
 * (that attempt, claimed by this runner) holds, so a runner that lost its task to a newer attempt (frozen,
 * cut off, then back) adds nothing to the log after it — its worker's late output, its deferred records.
 */
export function fenceRunEvents(engine: EngineContext, taskId: string, fence: Fence): EngineContext {
  const write = <T>(fn: () => T): T => engine.write(() => withEventFence(engine.db, taskId, fence, fn));
  // The run reads the engine on every event: each method is bound once, not at every access.
  const bound = new Map<PropertyKey, unknown>([['write', write]]);
  return new Proxy(engine, {
    get(target, prop) {
      const known = bound.get(prop);
      if (known !== undefined) return known;
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      bound.set(prop, f);
      return f;
    },
  });
}

/** Keep events small: long text is cut, tool output trimmed. */
function eventPayload(e: NormalizedEvent): Record<string, unknown> {
  const { type: _t, ...rest } = e;
  const out: Record<string, unknown> = { ...rest };
  for (const k of ['text', 'output', 'message'] as const) {
    const v = out[k];
    if (typeof v === 'string' && v.length > TEXT_CAP) out[k] = v.slice(0, TEXT_CAP) + `… [${v.length - TEXT_CAP} more chars]`;
  }
  if (out.input !== undefined && JSON.stringify(out.input).length > TEXT_CAP) out.input = '[input too large]';
  return out;
}

/** The session's totals its last turn reported (a `worker.usage` event with `thread`), for a resumed turn. */
export function threadUsageOf(engine: EngineContext, taskId: string, session: string): ThreadUsage | null {
  const payload = latestUsageOfThread(engine.db, taskId, session);
  const t = payload ? (JSON.parse(payload) as { thread?: ThreadUsage }).thread : undefined;
  return t && typeof t.input === 'number' ? t : null;
}

export function persistEvents(engine: EngineContext, task: Task, events: NormalizedEvent[]): void {
  engine.write(() => writeEvents(engine, task, events));
}

/** A turn's events and the token counts they carry, in the caller's transaction (its session id fenced to its attempt). */
export function writeEvents(engine: EngineContext, task: Task, events: NormalizedEvent[]): void {
  const id = task.id;
  let input = 0;
  let cached = 0;
  let output = 0;
  let cost: number | null = null;
  for (const e of events) {
    appendEvent(engine.db, id, e.type, eventPayload(e));
    if (e.type === 'worker.started' && e.sessionId) updateRunFields(engine.db, task, { sessionId: e.sessionId });
    if (e.type === 'worker.usage') {
      input += e.inputTokens;
      cached += e.cachedTokens;
      output += e.outputTokens;
      if (typeof e.costUsd === 'number') cost = (cost ?? 0) + e.costUsd;
    }
  }
  if (input || cached || output || cost !== null) {
    addUsageTotals(engine.db, id, input, cached, output, cost);
  }
}

/** What a task's end write needs to wait for space: see landEndWrite. */
export interface EndWriteContext {
  taskId: string;
  /** The home folder: an I/O error on its full file system counts as full (store-faults.ts). */
  home?: string;
  /** Aborted when the leader stops running tasks (a shutdown, a lost lease): waiting for space ends then. */
  stopped?: AbortSignal;
  /** The scheduler's set of tasks whose end waits for the store (it starts nothing new meanwhile). */
  endsWaiting?: Set<string>;
  /** Told of every write the store refused for lack of space (the leader says so, once). */
  onStoreFault?: (err: unknown) => void;
}

const END_RETRY_FIRST_MS = 100;
const END_RETRY_MAX_MS = 2000;

/**
 * Write a task's end (its completion, its failure, what was deferred to it). A write the store refuses for
 * lack of space (SQLITE_FULL, a PostgreSQL server's full disk) or cannot take for now (an unreachable
 * server) is not dropped: it is retried, waiting 100 ms doubling to 2 s, until it lands, so the task never
 * stays `running` once the store is back. Waiting ends only when the leader stops running tasks; the end is
 * then not recorded, and the next leader orphans the task. Any other error is thrown at once.
 */
export async function landEndWrite<T>(w: EndWriteContext, fn: () => T): Promise<T> {
  let delay = END_RETRY_FIRST_MS;
  try {
    for (;;) {
      try {
        return fn();
      } catch (err) {
        if (!endWriteWaits(err, w.home)) throw err;
        w.onStoreFault?.(err);
        if (w.stopped?.aborted) throw err;
        w.endsWaiting?.add(w.taskId);
        await waitUnlessStopped(delay, w.stopped);
        delay = Math.min(END_RETRY_MAX_MS, delay * 2);
      }
    }
  } finally {
    w.endsWaiting?.delete(w.taskId);
  }
}

/**
 * A store that is full, or that cannot be reached for now (PostgreSQL refusing connections, a dropped one
 * that cannot be made again), will take the write later; thrown away, the task would stay `running` under a
 * live runner that no longer runs it. The write is fenced, so one that lands late after recovery moved the
 * task is refused. A store closed for good (it stopped answering) is not waited for: the runner stops.
 */
function endWriteWaits(err: unknown, home: string | undefined): boolean {
  if (storeFaultOf(err, home) === 'full') return true;
  return isAppError(err) && err.code === 'unavailable' && err.details?.closed !== true;
}

function waitUnlessStopped(ms: number, stopped: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stopped?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stopped?.addEventListener('abort', done, { once: true });
  });
}

/** A turn's events still held when it ended, then what its output lost (one event), deferred to the next write. */
export function deferTurnRecords(later: Deferred, engine: EngineContext, task: Task, trailing: NormalizedEvent[], truncated: Record<string, unknown> | null): void {
  if (trailing.length) later.add(() => writeEvents(engine, task, trailing));
  if (truncated) later.add(() => appendEvent(engine.db, task.id, 'worker.output_truncated', truncated));
}

/** The `worker.output_truncated` payload for a turn that lost output (events past the cap, raw log middle), or null. */
export function outputTruncation(budget: OutputBudget, before: DroppedOutput, raw: RawLogDropped, maxEvents: number): Record<string, unknown> | null {
  const events = budget.dropped.events - before.events;
  const chars = budget.dropped.chars - before.chars;
  if (events === 0 && raw.chars === 0) return null;
  return {
    droppedEvents: events,
    droppedChars: chars,
    maxEvents,
    rawLogDroppedChars: raw.chars,
    rawLogDroppedLines: raw.lines,
    message: `output truncated: ${events} output events (${chars} characters) past the cap of ${maxEvents} were not stored${raw.chars ? `; the raw log left out ${raw.lines} lines between its head and tail` : ''}`,
  };
}
