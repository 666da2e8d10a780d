import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/**
 * Process-level primitives written once: identity by PID + start time (so a recycled PID is never
 * killed), liveness, and a /proc snapshot (Linux) that the lifecycle module sweeps trees with.
 */

/** Start time of a process as an opaque string (Linux: clock ticks since boot), or null if it is gone. */
export function processStartTime(pid: number): string | null {
  if (process.platform === 'linux') {
    try {
      return statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))[19] ?? null;
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

/** Fields of /proc/PID/stat after the command name (which may contain spaces): [state, ppid, pgrp, …]. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** True when `pid` exists (signal 0 reaches it, or it exists but belongs to someone else). */
export function pidExists(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when `pid` is alive and, if `startTime` is given, is the same process that was recorded. */
export function isSameProcess(pid: number, startTime: string | null): boolean {
  if (!pidExists(pid)) return false;
  if (startTime === null) return true;
  return processStartTime(pid) === startTime;
}

/** True when `pid` runs (a zombie counts as dead: it holds nothing and ignores every signal). */
export function isAlive(pid: number): boolean {
  if (!pidExists(pid)) return false;
  if (process.platform !== 'linux') return true;
  try {
    return statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))[0] !== 'Z';
  } catch {
    return false;
  }
}

export interface ProcEntry {
  pid: number;
  ppid: number;
  /** Process group id. */
  pgrp: number;
  /** Start time in clock ticks since boot (the number `processStartTime` gives as a string). */
  start: number;
}

/** Every live (non-zombie) process visible in /proc, with parent and group. Linux only; empty elsewhere. */
export function listProcesses(): ProcEntry[] {
  if (process.platform !== 'linux') return [];
  const out: ProcEntry[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = statFields(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (f[0] === 'Z' || f[0] === 'X') continue;
      out.push({ pid: Number(entry), ppid: Number(f[1]), pgrp: Number(f[2]), start: Number(f[19]) });
    } catch {
      // raced with an exiting process
    }
  }
  return out;
}

/** All descendants of `pid` in a snapshot, by parent links. */
export function descendantsIn(procs: ProcEntry[], pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of procs) {
    const list = children.get(p.ppid) ?? [];
    list.push(p.pid);
    children.set(p.ppid, list);
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

/**
 * The initial environment of `pid` as a set of `KEY=value` strings (Linux /proc/PID/environ), or null
 * when it cannot be read: other users' processes are unreadable, so nothing of theirs ever matches.
 */
export function environOf(pid: number): Set<string> | null {
  try {
    return new Set(readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0'));
  } catch {
    return null;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
