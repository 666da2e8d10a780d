import { readdirSync, readFileSync } from 'node:fs';
import { freemem } from 'node:os';

/**
 * The environment variable that points the memory reading at a file in /proc/meminfo's format instead of
 * /proc/meminfo itself: a test aid (a test writes `MemAvailable: N kB` into it to play a machine short of
 * memory, then one with room again). Nothing else reads it.
 */
export const MEMINFO_ENV = 'LIGHTWORKER_MEMINFO';

/**
 * MiB the machine can give a new process now without swapping: MemAvailable from /proc/meminfo (the
 * kernel's own estimate: free memory plus the caches it can drop), else os.freemem() (other systems).
 */
export function availableMib(env: NodeJS.ProcessEnv = process.env): number {
  const file = env[MEMINFO_ENV] || '/proc/meminfo';
  try {
    const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(readFileSync(file, 'utf8'));
    if (m) return Math.floor(Number(m[1]) / 1024);
  } catch {
    // not Linux (or no such file): the portable figure below
  }
  return Math.floor(freemem() / 1024 / 1024);
}

/** Resident MiB of one process (VmRSS), or 0 when it is gone. */
function rssMib(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s*kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** The children of a process, over all its threads (Linux /proc/PID/task/TID/children). */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
      try {
        return readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

/**
 * Resident MiB of a process and its descendants (a worker CLI and what it started), walked from the root
 * down through /proc: a few small reads per process, no scan of every process. 0 off Linux.
 */
export function treeRssMib(pid: number, maxProcs = 256): number {
  let total = 0;
  const seen = new Set<number>();
  const todo = [pid];
  while (todo.length && seen.size < maxProcs) {
    const p = todo.pop()!;
    if (seen.has(p)) continue;
    seen.add(p);
    total += rssMib(p);
    todo.push(...childrenOf(p));
  }
  return Math.round(total);
}
