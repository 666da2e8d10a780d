import { StringDecoder } from 'node:string_decoder';
import { createLineRedactor, redactText } from '../core/redact.js';
import type { NormalizedEvent, TurnOutcome, WorkerAdapter, WorkerTurn } from '../workers/adapter.js';
import { LineSplitter, TailBuffer } from '../platform/proc/lines.js';
import { OutputBudget } from './output-budget.js';
import { RawLog } from './raw-log.js';
import { runTree } from '../platform/proc/run-tree.js';

export interface RunTurnOptions {
  /** Aborting sweeps the whole process tree; the abort reason ('timeout' | 'cancel' | …) is reported back. */
  signal: AbortSignal;
  /** Called once the process exists, with its identity (for the task row: crash recovery). */
  onSpawn?: (pid: number, startTime: string | null) => void;
  /** Normalized events, batched: at most one call per event-loop turn (or per `eventBatchMs`). */
  onEvents?: (events: NormalizedEvent[]) => void;
  /**
   * Hold events up to this long before handing them over (fewer, larger batches; 0: next event-loop turn).
   * With `deferTrailing`, what is still held when the process exits is returned as `trailing` instead, for
   * the caller to write with its next transaction (a fast worker's whole stream rides with its completion).
   */
  eventBatchMs?: number;
  deferTrailing?: boolean;
  /** SIGTERM → SIGKILL grace, in ms. */
  killGraceMs: number;
  /** Where to keep the redacted raw stdout (its head and tail, `rawLogMaxBytes` in all); none when omitted. */
  rawLogPath?: string;
  rawLogMaxBytes?: number;
  /** What may be stored of the output: shared by the turns of one attempt (default: 2000 output events). */
  budget?: OutputBudget;
  /** Every event as soon as its line is parsed, before any is merged, capped or batched (the spend guard). */
  onParsed?: (events: NormalizedEvent[]) => void;
}

/** How much the raw log left out between its head and its tail. */
export interface RawLogDropped {
  chars: number;
  lines: number;
}

export interface TurnResult extends TurnOutcome {
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  stderrTail: string;
  /** Why the turn was stopped from outside, when it was. */
  aborted: string | null;
  pid: number;
  /** Events not handed to onEvents (`deferTrailing`): the caller writes them. */
  trailing: NormalizedEvent[];
  rawLogDropped: RawLogDropped;
}

/**
 * Run one worker turn: spawn the adapter's argv as a tree (platform/proc/run-tree.ts), parse stdout line by
 * line into normalized events as it streams, keep a stderr tail. The turn ends when the worker process
 * exits (not when its pipes close: a dev server it left behind may hold them); abort, timeout and every
 * other end sweep the whole tree.
 */
export async function runTurn(adapter: WorkerAdapter, turn: WorkerTurn, opts: RunTurnOptions): Promise<TurnResult> {
  const spec = await adapter.buildSpawn(turn);
  const parser = adapter.createParser(turn);
  const stderrTail = new TailBuffer(16 * 1024);
  const raw = opts.rawLogPath ? new RawLog(opts.rawLogPath, opts.rawLogMaxBytes ?? 8 * 1024 * 1024) : null;
  const budget = opts.budget ?? new OutputBudget(2000);

  let pending: NormalizedEvent[] = spec.warning ? [{ type: 'worker.warning', message: spec.warning }] : [];
  let flushQueued = false;
  let eventTimer: NodeJS.Timeout | null = null;
  // `fromTimer`: a throw there would crash the process. A batch the store refused then (unreachable for a
  // moment) goes back in front and is written with the next one, or with the turn's end, where a store
  // still failing fails the turn as any write would.
  const handOver = (fromTimer = false) => {
    if (eventTimer) clearTimeout(eventTimer);
    eventTimer = null;
    budget.seal();
    if (!pending.length) return;
    const batch = pending;
    pending = [];
    try {
      opts.onEvents?.(batch);
    } catch (err) {
      if (!fromTimer) throw err;
      pending = batch.concat(pending);
    }
  };
  const flush = () => {
    flushQueued = false;
    raw?.flush();
    if (!opts.eventBatchMs) handOver(true);
    else if (pending.length && !eventTimer) eventTimer = setTimeout(() => handOver(true), opts.eventBatchMs);
  };
  const queueFlush = () => {
    if (flushQueued) return;
    flushQueued = true;
    setImmediate(flush);
  };

  // Lines are redacted before anything sees them: a key printed over several lines spans many events.
  const redactLine = createLineRedactor();
  const splitter = new LineSplitter((rawLine) => {
    const line = redactLine(rawLine);
    if (raw) {
      raw.add(line);
      queueFlush();
    }
    if (!line.trim()) return;
    let events: NormalizedEvent[];
    try {
      events = parser.line(line);
    } catch {
      events = [];
    }
    if (!events.length) return;
    opts.onParsed?.(events);
    // Merged and capped here: while a worker floods, what waits for the store stays small.
    const before = pending.length;
    budget.take(events, pending, line.trimStart()[0] !== '{');
    if (pending.length !== before) queueFlush();
  });
  const stdout = new StringDecoder('utf8');

  const stderr = new StringDecoder('utf8');
  // The turn ends when the worker process exits; its tree is swept before runTree resolves.
  let end: Awaited<ReturnType<typeof runTree>>;
  try {
    end = await runTree(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      input: spec.stdin,
      graceMs: opts.killGraceMs,
      signal: opts.signal,
      // A budget reached: nothing more may be spent, so no grace for a worker that would ignore SIGTERM.
      killNowOn: ['budget'],
      onSpawn: opts.onSpawn,
      onStdout: (b) => splitter.push(stdout.write(b)),
      onStderr: (b) => stderrTail.push(stderr.write(b)),
    });
  } finally {
    // The whole tree is gone: nothing can still read or refresh a staged credential.
    spec.release?.();
  }
  splitter.push(stdout.end());
  splitter.end();
  raw?.flush();
  raw?.close();
  budget.seal();
  pending.push(...budget.takeSummedUsage());
  let trailing: NormalizedEvent[] = [];
  if (opts.deferTrailing) {
    if (eventTimer) clearTimeout(eventTimer);
    trailing = pending;
    pending = [];
  } else handOver();
  const { exitCode: code, exitSignal: sig, pid, aborted } = end;
  const rawLogDropped = { chars: raw?.droppedChars ?? 0, lines: raw?.droppedLines ?? 0 };

  const tail = redactText(stderrTail.toString());
  if (end.spawnError || pid <= 0) {
    const message = `cannot start ${spec.command}: ${end.spawnError ?? 'spawn failed'}`;
    return { ok: false, finalText: null, sessionId: null, error: { code: 'worker_failed', message }, exitCode: null, exitSignal: null, stderrTail: tail, aborted, pid, trailing, rawLogDropped };
  }
  const outcome = await parser.finish(code, tail);
  return { ...outcome, exitCode: code, exitSignal: sig, stderrTail: tail, aborted, pid, trailing, rawLogDropped };
}
