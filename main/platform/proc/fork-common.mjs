// What the leader does around a fork (process.ts, spawner.ts), and what spawner-helper.py does the same way
// (its PID mark, its start time): plain JavaScript with Node built-ins only. Types: fork-common.d.mts.
import { readFileSync } from 'node:fs';

/** Fields of /proc/PID/stat after the command name (which may contain spaces): [state, ppid, pgrp, …]. */
export function statFields(stat) {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A positive number from a /proc file (the whole file, or `pattern`'s first group), or null. */
export function readProcNumber(path, pattern) {
  try {
    const text = readFileSync(path, 'utf8');
    const n = Number(pattern ? pattern.exec(text)?.[1] : text.trim());
    return Number.isFinite(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/** Where PID allocation stands now (last PID handed out, the system's fork count); null where /proc does not say. */
export function markPids() {
  if (process.platform !== 'linux') return null;
  const pid = readProcNumber('/proc/sys/kernel/ns_last_pid');
  const forks = readProcNumber('/proc/stat', /^processes (\d+)$/m);
  return pid && forks ? { pid, forks } : null;
}

/** Linux: the start time of a process (clock ticks since boot) as a string, or null if it is gone. */
export function linuxStartTime(pid) {
  try {
    return statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))[19] ?? null;
  } catch {
    return null;
  }
}

/** `child_process.spawn` options of a request: exactly its env and cwd, its own group when detached, never a shell. */
export function spawnOptions(req) {
  return { cwd: req.cwd, env: req.env, stdio: [req.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], detached: req.detached, windowsHide: true, shell: false };
}
