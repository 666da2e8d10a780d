import { killTree, spawnGroup } from '../runner/process.js';
import { TailBuffer } from '../runner/lines.js';
import { pickEnv } from '../workers/env.js';

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

/** SIGKILL whatever is left of the process group led by `pid` (already-gone groups are fine). */
function killGroup(pid: number): void {
  if (pid <= 0 || process.platform === 'win32') return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // no such group: nothing left
  }
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
 * Run one user command in its own process group with a hard timeout: at the deadline (or on abort)
 * the whole tree gets SIGTERM, then SIGKILL after `graceMs`. Resolves when the child has exited.
 */
export async function runBounded(cmd: UserCommand, opts: BoundedRunOptions): Promise<BoundedRunResult> {
  const started = Date.now();
  const tailMax = opts.tailBytes ?? 8 * 1024;
  const keepMax = opts.keepBytes ?? 1024 * 1024;
  const tail = new TailBuffer(tailMax);
  const kept: Buffer[] = [];
  let keptBytes = 0;
  const [file, args] = argvOf(cmd);
  const { child, pid, startTime } = spawnGroup(file, args, { cwd: opts.cwd, env: opts.env });
  if (pid > 0) opts.onSpawn?.(pid, startTime);
  let timedOut = false;
  let aborted = false;
  let spawnError: string | null = null;
  const onData = (b: Buffer) => {
    tail.push(b.toString('utf8'));
    if (keptBytes < keepMax) {
      kept.push(b.subarray(0, keepMax - keptBytes));
      keptBytes += Math.min(b.length, keepMax - keptBytes);
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const grace = opts.graceMs ?? 2000;
  const kill = () => {
    if (pid > 0) void killTree(pid, startTime, grace);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, opts.timeoutMs);
  const onAbort = () => {
    aborted = true;
    kill();
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (e) => {
      spawnError = e.message;
      resolve({ code: null, signal: null });
    });
    child.once('close', (code, signal) => resolve({ code, signal }));
    // The command itself ended but something it started in the background still holds the output
    // pipes: give it a moment, then end the whole group so the command's own verdict stands.
    child.once('exit', (code, signal) => {
      setTimeout(() => {
        killGroup(pid);
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve({ code, signal });
      }, 500).unref();
    });
  });
  clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort);
  // Nothing a user command started outlives it (background servers, a grandchild that ignored SIGTERM).
  killGroup(pid);
  return {
    exitCode: code,
    signal,
    durationMs: Date.now() - started,
    timedOut,
    aborted,
    output: Buffer.concat(kept).toString('utf8'),
    tail: tailBytes(tail.toString(), tailMax),
    spawnError,
  };
}
