import { StringDecoder } from 'node:string_decoder';
import { runTree } from './run-tree.js';
import { TailBuffer } from './lines.js';
import { pickEnv } from './env.js';

/** A command given by the user: an argv array (no shell), or their own shell string (`/bin/sh -c`). */
export type UserCommand = string[] | string;

export interface BoundedRunResult {
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  timedOut: boolean;
  aborted: boolean;
  /** stdout+stderr interleaved, first `keepBytes` only. */
  output: string;
  /** The last `tailBytes` of the output. */
  tail: string;
  spawnError: string | null;
}

export interface BoundedRunOptions {
  cwd: string;
  /** The child's complete environment. */
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  graceMs?: number;
  tailBytes?: number;
  keepBytes?: number;
  /** Called once the process exists (the runner records it so a takeover can find and kill it). */
  onSpawn?: (pid: number, startTime: string | null) => void;
}

const COMMAND_KEYS = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', ...(process.platform === 'win32' ? ['SystemRoot', 'ComSpec', 'PATHEXT', 'TEMP', 'TMP', 'USERPROFILE'] : [])];

/** The environment of setup and verify commands: shorter than a worker's; never LightWorker's tokens or keys. */
export function commandEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { ...pickEnv(COMMAND_KEYS), ...extra };
}

function argvOf(cmd: UserCommand): [string, string[]] {
  if (Array.isArray(cmd)) return [cmd[0], cmd.slice(1)];
  // The user's own shell string: they wrote it, so it runs with their shell semantics.
  return process.platform === 'win32' ? ['cmd.exe', ['/d', '/s', '/c', cmd]] : ['/bin/sh', ['-c', cmd]];
}

/** Last `max` bytes of `s` as valid UTF-8. */
export function tailBytes(s: string, max: number): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= max) return s;
  return buf
    .subarray(buf.length - max)
    .toString('utf8')
    .replace(/^\uFFFD+/, '');
}

/**
 * Run one user command as a tree (run-tree.ts) with a hard timeout: at the deadline (or on
 * abort) the whole tree gets SIGTERM, then SIGKILL after `graceMs`. The command's own exit is its
 * verdict; whatever it left running (a background server holding its output, a grandchild that
 * ignores SIGTERM, an escaped process carrying the task marker) is swept before this resolves.
 */
export async function runBounded(cmd: UserCommand, opts: BoundedRunOptions): Promise<BoundedRunResult> {
  const tailMax = opts.tailBytes ?? 8 * 1024;
  const keepMax = opts.keepBytes ?? 1024 * 1024;
  const tail = new TailBuffer(tailMax);
  const decoder = new StringDecoder('utf8');
  const kept: Buffer[] = [];
  let keptBytes = 0;
  const onData = (b: Buffer) => {
    tail.push(decoder.write(b));
    if (keptBytes < keepMax) {
      kept.push(b.subarray(0, keepMax - keptBytes));
      keptBytes += Math.min(b.length, keepMax - keptBytes);
    }
  };
  const [file, args] = argvOf(cmd);
  const end = await runTree(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    graceMs: opts.graceMs ?? 2000,
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    onSpawn: opts.onSpawn,
    onStdout: onData,
    onStderr: onData,
  });
  return {
    exitCode: end.exitCode,
    signal: end.exitSignal,
    durationMs: end.durationMs,
    timedOut: end.timedOut,
    aborted: end.aborted !== null,
    output: Buffer.concat(kept).toString('utf8'),
    tail: tailBytes(tail.toString() + decoder.end(), tailMax),
    spawnError: end.spawnError,
  };
}
