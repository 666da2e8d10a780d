import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { linuxStartTime, markPids, readProcNumber, statFields, type PidMark } from './fork-common.mjs';

/**
 * Process-level primitives written once: identity by PID + start time (so a recycled PID is never
 * killed), liveness, and a /proc snapshot (Linux) that the lifecycle module sweeps trees with.
 */

/** Start time of a process as an opaque string (Linux: clock ticks since boot), or null if it is gone. */
export function processStartTime(pid: number): string | null {
  if (process.platform === 'linux') {
    return linuxStartTime(pid);
  }
  try {
    const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return out || null;
  } catch {
    return null;
  }
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

/** One live (non-zombie) process from /proc, or null (gone, a zombie, unreadable). */
function procEntry(pid: number): ProcEntry | null {
  try {
    const f = statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    if (f[0] === 'Z' || f[0] === 'X') return null;
    return { pid, ppid: Number(f[1]), pgrp: Number(f[2]), start: Number(f[19]) };
  } catch {
    return null; // raced with an exiting process
  }
}

/**
 * Every live (non-zombie) process visible in /proc, with parent and group. Linux only; empty elsewhere.
 * With `pids`, only those are read (a tree just run: see {@link pidsHandedOutSince}).
 */
export function listProcesses(pids?: readonly number[]): ProcEntry[] {
  if (process.platform !== 'linux') return [];
  const out: ProcEntry[] = [];
  const candidates = pids ?? readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
  for (const pid of candidates) {
    const p = procEntry(pid);
    if (p) out.push(p);
  }
  return out;
}

/** Where PID allocation stood at a moment: the last PID handed out and the system's fork count. */
export type { PidMark };

let pidMaxCache: number | null | undefined;

/** Now, as a {@link PidMark}; null where /proc does not say (not Linux, hidden /proc). */
export { markPids };

/**
 * Every PID this PID namespace can have handed out since `since` (inclusive of its own), or null when
 * that cannot be bounded. PIDs are handed out in a cycle up to pid_max; /proc/stat counts every fork
 * on the machine (threads included), which bounds how far the cycle moved: well under one turn, the
 * new PIDs lie between the PID then and the last PID now. A sweep of a tree just run then reads a
 * few /proc entries instead of every process's (10 ms a sweep on a busy machine, measured in a 200-task drain, npm run bench).
 */
export function pidsHandedOutSince(since: PidMark, maxCount = 512): number[] | null {
  const now = markPids();
  pidMaxCache ??= readProcNumber('/proc/sys/kernel/pid_max');
  const pidMax = pidMaxCache;
  if (!now || !pidMax) return null;
  return pidRange(since, now, pidMax, maxCount);
}

/** The PIDs from `since.pid` to `now.pid` in the allocation cycle (1 … pidMax−1); null when unbounded or over `maxCount`. */
export function pidRange(since: PidMark, now: PidMark, pidMax: number, maxCount: number): number[] | null {
  if (now.forks - since.forks >= pidMax / 2) return null; // could have gone round the whole cycle
  const count = now.pid >= since.pid ? now.pid - since.pid + 1 : pidMax - since.pid + now.pid;
  if (count > maxCount) return null;
  const out: number[] = [];
  for (let i = 0, p = since.pid; i < count; i++, p = p >= pidMax - 1 ? 1 : p + 1) out.push(p);
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
