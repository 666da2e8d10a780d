import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/**
 * Process-level primitives written once for every worker and verify command: a process group per
 * child, identity by PID + start time (so a recycled PID is never killed), and tree kills.
 */

/** Start time of a process as an opaque string (Linux: clock ticks since boot), or null if it is gone. */
export function processStartTime(pid: number): string | null {
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Field 22; the command name (field 2) may contain spaces, so count from the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields[19] ?? null;
    } catch {
      return null;
    }
  }
  try {
    const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return out || null;
  } catch {
    return null;
  }
}

/** True when `pid` is alive and, if `startTime` is given, is the same process that was recorded. */
export function isSameProcess(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (startTime === null) return true;
  return processStartTime(pid) === startTime;
}

/** All descendants of `pid` (Linux /proc walk; empty elsewhere), deepest last. */
export function descendantsOf(pid: number): number[] {
  if (process.platform !== 'linux') return [];
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // raced with an exiting process
    }
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length) {
    for (const c of children.get(stack.pop()!) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

function signalTree(pid: number, signal: NodeJS.Signals, extra: number[]): void {
  try {
    process.kill(-pid, signal); // the whole process group (children were spawned detached)
  } catch {
    // group already gone
  }
  for (const p of extra) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * Kill a process tree: SIGTERM to the group and every known descendant, then SIGKILL after `graceMs`
 * to whatever is left (Windows: taskkill /T /F). Refuses to touch a PID whose start time no longer
 * matches `startTime`. Resolves once the leader process is gone (or after the SIGKILL round).
 */
export async function killTree(pid: number, startTime: string | null, graceMs: number): Promise<boolean> {
  if (!isSameProcess(pid, startTime)) return false;
  if (process.platform === 'win32') {
    try {
      execFileSync('taskkill', ['/T', '/F', '/PID', String(pid)], { stdio: 'ignore' });
    } catch {
      // already gone
    }
    return true;
  }
  let tree = descendantsOf(pid);
  signalTree(pid, 'SIGTERM', tree);
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(Math.min(50, graceMs));
    const alive = [pid, ...tree].filter((p) => isAlive(p));
    if (alive.length === 0) return true;
  }
  // New descendants may have appeared during the grace period.
  tree = [...new Set([...tree, ...descendantsOf(pid)])];
  signalTree(pid, 'SIGKILL', tree);
  return true;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie is dead for our purposes.
    if (process.platform === 'linux') {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
    }
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface SpawnedChild {
  child: ChildProcess;
  pid: number;
  startTime: string | null;
}

/**
 * Spawn `command` with exactly `env` (nothing inherited), in its own process group, stdin closed.
 * Never uses a shell.
 */
export function spawnGroup(command: string, args: string[], opts: { cwd: string; env: Record<string, string> }): SpawnedChild {
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: process.platform !== 'win32',
    windowsHide: true,
    shell: false,
  });
  if (child.pid === undefined) {
    // spawn failed synchronously (ENOENT arrives as an 'error' event); callers handle it there.
    return { child, pid: -1, startTime: null };
  }
  return { child, pid: child.pid, startTime: processStartTime(child.pid) };
}
