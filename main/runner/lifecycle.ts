import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { descendantsIn, environOf, isSameProcess, listProcesses, pidExists, pidsHandedOutSince, sleep, type PidMark } from './process.js';
import { spawnProcess, type ChildLike } from './spawner.js';

/**
 * The one owner of every process tree LightWorker starts (worker turns, setup and verify commands):
 * spawn in its own process group with exactly the given env, record identity (PID + start time), end
 * the run when the process itself exits (then a bounded drain of its pipes), and sweep the tree at
 * every end — normal exit, failure, timeout, cancel, shutdown, takeover: SIGTERM to the group, its
 * known descendants and (Linux) every process carrying the tree's marker, a grace, then SIGKILL.
 *
 * The marker: every worker/setup/verify process gets LIGHTWORKER_TASK_ID, LIGHTWORKER_ATTEMPT and
 * LIGHTWORKER_HOME_ID in its environment and passes them on to whatever it starts, even a process
 * that left the group (setsid, double fork) and was re-parented to init. Only a process whose initial
 * environment carries all three exactly is swept: a task id alone could repeat in a copied home, and
 * the attempt keeps a retry's processes safe from the sweep of the attempt before it.
 */

/** The environment variables that mark a process as belonging to one attempt of one task. */
export const MARKER_KEYS = ['LIGHTWORKER_TASK_ID', 'LIGHTWORKER_ATTEMPT', 'LIGHTWORKER_HOME_ID'] as const;

/**
 * The marker of a task attempt run from the home at `homeRoot`. The home is hashed (its path is not
 * the workers' business) after resolving symlinks, so every process of that home computes the same id.
 */
export function treeMarkerEnv(homeRoot: string, taskId: string, attempt: number): Record<string, string> {
  let home = homeRoot;
  try {
    home = realpathSync.native(homeRoot);
  } catch {
    // not created yet: the path as given
  }
  return {
    LIGHTWORKER_TASK_ID: taskId,
    LIGHTWORKER_ATTEMPT: String(attempt),
    LIGHTWORKER_HOME_ID: createHash('sha256').update(home).digest('hex').slice(0, 16),
  };
}

/** The marker carried by `env`, or null when it does not carry a complete one. */
export function markerOf(env: Record<string, string>): Record<string, string> | null {
  const m: Record<string, string> = {};
  for (const k of MARKER_KEYS) {
    if (!env[k]) return null;
    m[k] = env[k];
  }
  return m;
}

/**
 * `env` without a tree marker: for LightWorker's own long-lived processes started from inside a task
 * (the background runner of an MCP session an agent launched), which serve the whole home and must not
 * be swept as part of that task once it re-parented to init.
 */
export function withoutTreeMarker(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of MARKER_KEYS) delete out[k];
  return out;
}

/** What is known of a spawned tree: its leader (also its process group id) and its marker. */
export interface Tree {
  /** Leader PID and process group id; ≤ 0 when the leader never existed or is unknown. */
  pid: number;
  startTime: string | null;
  marker: Record<string, string> | null;
  /**
   * Linux: only processes started at or after this many clock ticks since boot can carry the marker (a
   * tree that was just run: whatever it started is younger than its leader), so older processes' environments
   * are not read. Unset (takeover): every process is checked.
   */
  markerSince?: number;
  /**
   * Where PID allocation stood just before the leader was spawned (a tree that was just run): what it
   * started can only have PIDs handed out since, so a sweep reads those /proc entries alone when that
   * set is small and provably complete (runner/process.ts `pidsHandedOutSince`). Unset: all of /proc.
   */
  pidsSince?: PidMark;
}

interface Scan {
  /** Per tree: the processes found. */
  members: number[][];
  /** Per tree: those of them in its process group (one group signal reaches them). */
  grouped: Set<number>[];
  /** Per tree: whether its process group may be signalled as a whole. */
  groups: boolean[];
}

/**
 * The group of a tree may be signalled when its leader is still the recorded process, or is gone:
 * Linux and macOS never hand out a PID while a group of that id has members, so a PID that was
 * recycled by an unrelated process means the old group is empty (and that new process is left alone).
 */
function groupUsable(t: Tree): boolean {
  return t.pid > 0 && process.platform !== 'win32' && (isSameProcess(t.pid, t.startTime) || !pidExists(t.pid));
}

/** The PIDs the trees' processes can have, when every tree was just run and that set is small; else null. */
function candidatePids(trees: Tree[]): number[] | null {
  const all = new Set<number>();
  for (const t of trees) {
    if (!t.pidsSince || t.markerSince === undefined) return null;
    const pids = pidsHandedOutSince(t.pidsSince);
    if (!pids) return null;
    for (const p of pids) all.add(p);
  }
  return [...all];
}

function scanTrees(trees: Tree[]): Scan {
  const procs = listProcesses(candidatePids(trees) ?? undefined);
  const linux = process.platform === 'linux';
  const members = trees.map(() => [] as number[]);
  const grouped = trees.map(() => new Set<number>());
  const groups = trees.map(groupUsable);
  // Each environment is read at most once per scan, however many trees are swept together.
  const envs = new Map<number, Set<string> | null>();
  const carries = (pid: number, marker: Record<string, string>) => {
    if (!envs.has(pid)) envs.set(pid, environOf(pid));
    const env = envs.get(pid);
    return Boolean(env) && Object.entries(marker).every(([k, v]) => env!.has(`${k}=${v}`));
  };
  trees.forEach((t, i) => {
    const found = new Set<number>();
    if (groups[i]) {
      for (const p of procs) {
        if (p.pgrp !== t.pid) continue;
        found.add(p.pid);
        grouped[i].add(p.pid);
      }
      if (isSameProcess(t.pid, t.startTime)) for (const d of descendantsIn(procs, t.pid)) found.add(d);
    }
    const since = t.markerSince ?? 0;
    if (t.marker) for (const p of procs) if (p.start >= since && !found.has(p.pid) && carries(p.pid, t.marker)) found.add(p.pid);
    found.delete(process.pid);
    found.delete(1);
    members[i] = [...found];
    // Without /proc the group is probed with signal 0 (it fails once no member is left).
    if (groups[i] && !linux) groups[i] = probeGroup(t.pid);
    else if (groups[i]) groups[i] = procs.some((p) => p.pgrp === t.pid);
  });
  return { members, grouped, groups };
}

function probeGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Signal what a scan found. With `onlyNew`, processes already signalled (in `seen`) and groups already
 * signalled are skipped: a second SIGTERM means "hurry, skip cleanup" to many programs.
 */
function signalScan(trees: Tree[], scan: Scan, signal: NodeJS.Signals, seen: Set<number>[], groupsDone: boolean[], onlyNew: boolean): void {
  trees.forEach((t, i) => {
    let viaGroup = false;
    if (scan.groups[i] && !(onlyNew && groupsDone[i])) {
      groupsDone[i] = viaGroup = true;
      try {
        process.kill(-t.pid, signal);
      } catch {
        // the group emptied meanwhile
      }
    }
    for (const pid of scan.members[i]) {
      if (onlyNew && seen[i].has(pid)) continue;
      if (viaGroup && scan.grouped[i].has(pid)) {
        seen[i].add(pid);
        continue;
      }
      seen[i].add(pid);
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  });
}

const isEmpty = (scan: Scan) => scan.members.every((m) => m.length === 0) && scan.groups.every((g) => !g);

/**
 * Sweep several trees at once (one /proc scan per round): SIGTERM to each group, its leader's known
 * descendants and its marked processes, newcomers included, for up to `graceMs`; then SIGKILL until
 * nothing is left (bounded). Windows: `taskkill /T /F` on a leader that is still the recorded process.
 * Returns, per tree, how many processes were signalled (0: nothing of it was running).
 */
export async function sweepTrees(trees: Tree[], graceMs: number): Promise<number[]> {
  if (process.platform === 'win32') return trees.map(taskkill);
  const seen = trees.map(() => new Set<number>());
  const groupsDone = trees.map(() => false);
  let scan = scanTrees(trees);
  const deadline = Date.now() + graceMs;
  // Most trees are gone a few ms after SIGTERM: look again soon, then back off (each scan reads /proc).
  for (let wait = 10; !isEmpty(scan) && Date.now() < deadline; wait = Math.min(wait * 2, 100)) {
    signalScan(trees, scan, 'SIGTERM', seen, groupsDone, true);
    await sleep(Math.max(1, Math.min(wait, deadline - Date.now())));
    scan = scanTrees(trees);
  }
  // SIGKILL cannot be ignored; a few rounds catch what was forked between a scan and its signal.
  for (let round = 0; round < 40 && !isEmpty(scan); round++) {
    signalScan(trees, scan, 'SIGKILL', seen, groupsDone, false);
    await sleep(25);
    scan = scanTrees(trees);
  }
  return seen.map((s, i) => s.size || (groupsDone[i] ? 1 : 0));
}

/** Sweep one tree; see {@link sweepTrees}. */
export async function sweepTree(tree: Tree, graceMs: number): Promise<number> {
  return (await sweepTrees([tree], graceMs))[0];
}

function taskkill(t: Tree): number {
  if (t.pid <= 0 || !isSameProcess(t.pid, t.startTime)) return 0;
  try {
    execFileSync('taskkill', ['/T', '/F', '/PID', String(t.pid)], { stdio: 'ignore' });
  } catch {
    // already gone
  }
  return 1;
}

export interface RunTreeOptions {
  cwd: string;
  /** The child's complete environment (nothing is inherited); its marker, if any, is swept at the end. */
  env: Record<string, string>;
  /** SIGTERM → SIGKILL grace of every sweep, in ms. */
  graceMs: number;
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

/** Default drain after exit: output already written arrives at once; only a held pipe waits this long. */
export const DRAIN_MS = 500;

/**
 * Run `command args` as a tree: its own process group, exactly `opts.env`, stdin closed (or `opts.input`
 * and then closed), no shell.
 * The run ends when the process itself exits (or cannot start); its pipes are then drained for at
 * most `drainMs` and destroyed, and the whole tree is swept before this resolves — so nothing it
 * started outlives it, and a background child holding stdout cannot keep it open.
 */
export async function runTree(command: string, args: string[], opts: RunTreeOptions): Promise<TreeEnd> {
  const started = Date.now();
  const withInput = opts.input !== undefined;
  const { child, ready } = spawnProcess({ command, args, cwd: opts.cwd, env: opts.env, detached: process.platform !== 'win32', stdin: withInput, identity: true });
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
  const { pid, startTime, pidsSince } = await ready;
  const tree: Tree = { pid, startTime, marker: markerOf(opts.env) };
  let hookError: unknown = null;
  // Everything this run starts is younger than its leader: a sweep need not read older processes' environments.
  if (tree.startTime !== null && process.platform === 'linux') tree.markerSince = Number(tree.startTime);
  if (tree.markerSince !== undefined && pidsSince) tree.pidsSince = pidsSince;

  let timedOut = false;
  let aborted: string | null = null;
  let stopping: Promise<number> | null = null;
  const stop = () => (stopping ??= sweepTree(tree, opts.graceMs));
  const timer = opts.timeoutMs === undefined ? null : setTimeout(() => ((timedOut = true), void stop()), opts.timeoutMs);
  const onAbort = () => {
    aborted = String(opts.signal?.reason ?? 'aborted');
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
  await sweepTree(tree, opts.graceMs);
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

/** Wait for both pipes to end, at most `ms` (what the process wrote before exiting is already there). */
async function drain(child: ChildLike, ms: number): Promise<void> {
  const ended = (s: Readable | null) =>
    !s || s.readableEnded || s.destroyed ? Promise.resolve() : new Promise<void>((r) => (s.once('end', r), s.once('close', r)));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all([ended(child.stdout), ended(child.stderr)]), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
