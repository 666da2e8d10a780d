import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { redactText } from '../core/redact.js';
import type { NormalizedEvent, TurnOutcome, WorkerAdapter, WorkerTurn } from '../workers/adapter.js';
import { LineSplitter, TailBuffer } from './lines.js';
import { killTree, spawnGroup } from './process.js';

export interface RunTurnOptions {
  /** Aborting kills the whole process tree; the abort reason ('timeout' | 'cancel' | …) is reported back. */
  signal: AbortSignal;
  /** Called once the process exists, with its identity (for the task row: crash recovery). */
  onSpawn?: (pid: number, startTime: string | null) => void;
  /** Normalized events, batched: at most one call per event-loop turn. */
  onEvents?: (events: NormalizedEvent[]) => void;
  /** SIGTERM → SIGKILL grace, in ms. */
  killGraceMs: number;
  /** Where to keep the redacted raw stdout (capped); none when omitted. */
  rawLogPath?: string;
  rawLogMaxBytes?: number;
}

export interface TurnResult extends TurnOutcome {
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  stderrTail: string;
  /** Why the turn was stopped from outside, when it was. */
  aborted: string | null;
  pid: number;
}

/**
 * Run one worker turn: spawn the adapter's argv in its own process group, parse stdout line by line
 * into normalized events as it streams, keep a stderr tail, and kill the tree on abort.
 */
export async function runTurn(adapter: WorkerAdapter, turn: WorkerTurn, opts: RunTurnOptions): Promise<TurnResult> {
  const spec = await adapter.buildSpawn(turn);
  const parser = adapter.createParser(turn);
  const stderrTail = new TailBuffer(16 * 1024);
  let raw: WriteStream | null = null;
  let rawBytes = 0;
  const rawMax = opts.rawLogMaxBytes ?? 16 * 1024 * 1024;
  if (opts.rawLogPath) {
    mkdirSync(dirname(opts.rawLogPath), { recursive: true });
    raw = createWriteStream(opts.rawLogPath, { flags: 'a', mode: 0o600 });
  }

  let pending: NormalizedEvent[] = [];
  let flushQueued = false;
  const flush = () => {
    flushQueued = false;
    if (!pending.length) return;
    const batch = pending;
    pending = [];
    opts.onEvents?.(batch);
  };

  const { child, pid, startTime } = spawnGroup(spec.command, spec.args, { cwd: spec.cwd, env: spec.env });
  let spawnError: Error | null = null;
  child.on('error', (err) => {
    spawnError = err;
  });
  if (pid > 0) opts.onSpawn?.(pid, startTime);

  let aborted: string | null = null;
  let killing: Promise<boolean> | null = null;
  const onAbort = () => {
    aborted = String(opts.signal.reason ?? 'aborted');
    if (pid > 0) killing = killTree(pid, startTime, opts.killGraceMs);
  };
  if (opts.signal.aborted) onAbort();
  else opts.signal.addEventListener('abort', onAbort, { once: true });

  const splitter = new LineSplitter((line) => {
    if (raw && rawBytes < rawMax) {
      const text = redactText(line) + '\n';
      rawBytes += text.length;
      raw.write(text);
    }
    if (!line.trim()) return;
    let events: NormalizedEvent[];
    try {
      events = parser.line(line);
    } catch {
      events = [];
    }
    if (events.length) {
      pending.push(...events);
      if (!flushQueued) {
        flushQueued = true;
        setImmediate(flush);
      }
    }
  });
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (c: string) => splitter.push(c));
  child.stderr?.on('data', (c: string) => stderrTail.push(c));

  const { code, sig } = await new Promise<{ code: number | null; sig: NodeJS.Signals | null }>((resolve) => {
    if (pid <= 0) {
      child.once('error', () => resolve({ code: null, sig: null }));
      return;
    }
    child.once('close', (c, s) => resolve({ code: c, sig: s }));
  });
  opts.signal.removeEventListener('abort', onAbort);
  splitter.end();
  flush();
  if (killing) await killing;
  await new Promise<void>((r) => (raw ? raw.end(() => r()) : r()));

  const tail = redactText(stderrTail.toString());
  if (spawnError || pid <= 0) {
    const message = `cannot start ${spec.command}: ${(spawnError as Error | null)?.message ?? 'spawn failed'}`;
    return { ok: false, finalText: null, sessionId: null, error: { code: 'worker_failed', message }, exitCode: null, exitSignal: null, stderrTail: tail, aborted, pid };
  }
  const outcome = await parser.finish(code, tail);
  return { ...outcome, exitCode: code, exitSignal: sig, stderrTail: tail, aborted, pid };
}
