import type { Readable } from 'node:stream';
import { cgroupName } from './cgroup.js';
import { spawnProcess, spawnerChildPids, spawnerContainment, spawnerPid, type ChildLike } from './spawner.js';
import { markerOf } from './marker.js';
import { sweepTree, trackAdopting, type Tree } from './sweep.js';

/**
 * The one owner of every process tree LightWorker starts (worker turns, setup and verify commands):
 * spawn in its own process group with exactly the given env, record identity (PID + start time), end
 * the run when the process itself exits (then a bounded drain of its pipes), and sweep the tree at
 * every end — normal exit, failure, timeout, cancel, shutdown, takeover: SIGTERM to the group, its
 * known descendants and (Linux) every process carrying the tree's marker or in its cgroup, a grace, then
 * SIGKILL (sweep.ts). Which processes carry the tree's marker: marker.ts.
 *
 * Containment (Linux, through the Python spawner helper): a tree with a marker is started in a cgroup of its
 * own where the machine lets the helper make one, and the helper is a child subreaper either way, so what
 * drops the marker and leaves the group (env -i, setsid, a daemon) is still found: in the cgroup, or as an
 * orphan the helper adopted (see sweep.ts for how an orphan is told apart from other trees' ones).
 */

export interface RunTreeOptions {
  cwd: string;
  /** The child's complete environment (nothing is inherited); its marker, if any, is swept at the end. */
  env: Record<string, string>;
  /** SIGTERM → SIGKILL grace of every sweep, in ms. */
  graceMs: number;
  /**
   * Abort reasons that kill at once (SIGKILL, no grace): a stop whose point is that the tree does nothing
   * more, not that it exits cleanly (a budget reached: a worker ignoring SIGTERM would spend on through the grace).
   */
  killNowOn?: readonly string[];
  /** Aborting stops the tree (sweep); the abort reason is reported back. */
  signal?: AbortSignal;
  /** Stop the tree after this long and report `timedOut`. */
  timeoutMs?: number;
  /** How long to keep reading the pipes after the process exited (a background child may hold them). */
  drainMs?: number;
  onSpawn?: (pid: number, startTime: string | null) => void;
  /** Written to the child's stdin, which is then closed (else stdin is closed from the start). */
  input?: string;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
}

export interface TreeEnd {
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  pid: number;
  /** The process could not be started (ENOENT, EACCES, …). */
  spawnError: string | null;
  timedOut: boolean;
  /** The abort reason, when the run was aborted from outside. */
  aborted: string | null;
  /** From spawn to the process's exit (the drain and the sweep afterwards are not the command's time). */
  durationMs: number;
}

let treeCount = 0;

/**
 * Default drain after exit: how long the pipes may stay quiet before a held pipe (a background child that
 * keeps it open) is given up. Quiet, not in all: a loaded leader reads what the process wrote before it
 * exited (up to a pipe's worth per stream) chunk by chunk, each parsed before the next is read.
 */
export const DRAIN_MS = 500;
/** However busy the pipes stay after the exit (a background child writing on), the drain ends here. */
export const DRAIN_CAP_MS = 30_000;

/**
 * Run `command args` as a tree: its own process group, exactly `opts.env`, stdin closed (or `opts.input`
 * and then closed), no shell.
 * The run ends when the process itself exits (or cannot start); its pipes are then drained for at
 * most `drainMs` and destroyed, and the whole tree is swept before this resolves — so nothing it
 * started outlives it, and a background child holding stdout cannot keep it open.
 */
export async function runTree(command: string, args: string[], opts: RunTreeOptions): Promise<TreeEnd> {
  const started = Date.now();
  const marker = markerOf(opts.env);
  const cgroup = marker && process.platform === 'linux' ? cgroupName(marker, `${process.pid}.${++treeCount}`) : undefined;
  const withInput = opts.input !== undefined;
  const { child, ready } = spawnProcess({ command, args, cwd: opts.cwd, env: opts.env, detached: process.platform !== 'win32', stdin: withInput, identity: true, cgroup });
  const exited = exitOf(child);
  if (withInput && child.stdin) {
    // A process that exits without reading all of it (EPIPE) simply ends: its exit is what counts.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input);
  }
  if (opts.onStdout) child.stdout?.on('data', opts.onStdout);
  else child.stdout?.resume();
  if (opts.onStderr) child.stderr?.on('data', opts.onStderr);
  else child.stderr?.resume();
  const identity = await ready;
  const { pid, startTime, pidsSince } = identity;
  const tree: Tree = { pid, startTime, marker, cgroups: identity.cgroup ? [identity.cgroup] : [] };
  let hookError: unknown = null;
  // Everything this run starts is younger than its leader: a sweep need not read older processes' environments.
  if (tree.startTime !== null && process.platform === 'linux') tree.markerSince = Number(tree.startTime);
  if (tree.markerSince !== undefined && pidsSince) tree.pidsSince = pidsSince;
  // A subreaper helper without cgroups: the orphans of this tree become its children (sweep.ts).
  const containment = spawnerContainment();
  if (pid > 0 && containment?.subreaper && !containment.cgroup) tree.adopter = spawnerPid() ?? undefined;
  trackAdopting(tree);
  const sweep = () => sweepTree(tree, opts.graceMs, spawnerChildPids);

  let timedOut = false;
  let aborted: string | null = null;
  let stopping: Promise<number> | null = null;
  const stop = () => (stopping ??= sweep());
  const timer = opts.timeoutMs === undefined ? null : setTimeout(() => ((timedOut = true), void stop()), opts.timeoutMs);
  const onAbort = () => {
    aborted = String(opts.signal?.reason ?? 'aborted');
    if (opts.killNowOn?.includes(aborted)) {
      // The group first, in this very tick (our child, not yet reaped: its group id cannot be reused); the sweep
      // then finds what left the group.
      if (pid > 0 && process.platform !== 'win32') {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      stopping ??= sweepTree(tree, 0, spawnerChildPids);
    }
    void stop();
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (pid > 0) opts.onSpawn?.(pid, tree.startTime);
  } catch (err) {
    // Recording failed (e.g. the task was moved meanwhile): this tree must not run unrecorded.
    hookError = err;
    void stop();
  }

  const end = await exited;
  const durationMs = Date.now() - started;
  if (timer) clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort);
  if (!end.spawnError) await drain(child, opts.drainMs ?? DRAIN_MS);
  child.stdout?.destroy();
  child.stderr?.destroy();
  if (stopping) await stopping;
  // Every end sweeps: whatever the process left behind (group members, escaped marked processes).
  await sweep();
  if (hookError) throw hookError;
  return { ...end, pid, timedOut, aborted, durationMs };
}

function exitOf(child: ChildLike): Promise<{ exitCode: number | null; exitSignal: NodeJS.Signals | null; spawnError: string | null }> {
  return new Promise((resolve) => {
    // A failed spawn is the only 'error' that matters here; later ones (none expected) must not crash.
    child.on('error', (e) => resolve({ exitCode: null, exitSignal: null, spawnError: e.message }));
    child.once('exit', (code, sig) => resolve({ exitCode: code, exitSignal: sig, spawnError: null }));
  });
}

/**
 * Wait for both pipes to end, or for `idleMs` in which nothing arrived (a pipe a background child holds
 * open), at most `capMs` in all. A starved process finds the quiet timer and unread data ready at once,
 * and timers run first: before it gives up it lets the loop read once more (setImmediate runs after the
 * poll for I/O), and data found there keeps it draining.
 */
async function drain(child: ChildLike, idleMs: number, capMs = DRAIN_CAP_MS): Promise<void> {
  const open = [child.stdout, child.stderr].filter((s): s is Readable => s !== null && s !== undefined && !s.readableEnded && !s.destroyed);
  if (!open.length) return;
  await new Promise<void>((resolve) => {
    let left = open.length;
    let arrived = false;
    let done = false;
    let idle: NodeJS.Timeout | undefined;
    const cap = setTimeout(() => finish(), capMs);
    const onData = () => (arrived = true);
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(idle);
      clearTimeout(cap);
      for (const s of open) s.off('data', onData);
      resolve();
    };
    const quiet = () => {
      arrived = false;
      idle = setTimeout(() => setImmediate(() => (done ? undefined : arrived ? quiet() : finish())), idleMs);
    };
    for (const s of open) {
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        if (--left === 0) finish();
      };
      s.on('data', onData);
      s.once('end', end);
      s.once('close', end);
    }
    quiet();
  });
}
