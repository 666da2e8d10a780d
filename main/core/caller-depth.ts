import { readFileSync } from 'node:fs';

const DEPTH_VAR = /(?:^|\0)LIGHTWORKER_DEPTH=(\d+)(?:\0|$)/;

/** LIGHTWORKER_DEPTH as a number: 0 when unset or not a non-negative integer. */
export function parseDepth(value: string | undefined): number {
  const d = Number(value ?? 0);
  return Number.isInteger(d) && d >= 0 ? d : 0;
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return null;
  }
}

/**
 * The delegation depth of this process: its LIGHTWORKER_DEPTH, and on Linux the deepest one any of its
 * ancestors was started with (`/proc/<pid>/environ` is the environment a process began with, which its
 * children cannot rewrite). A worker's child that clears its environment (`env -i lightworker approve …`)
 * is still a worker's child, so it still counts as an agent, not a person. Elsewhere only the variable.
 * Cost: two small reads per ancestor, a handful of ancestors.
 */
export function callerDepth(env: NodeJS.ProcessEnv = process.env, start = process.ppid, procRoot = '/proc'): number {
  let depth = parseDepth(env.LIGHTWORKER_DEPTH);
  if (process.platform !== 'linux') return depth;
  let pid = start;
  for (let hops = 0; pid > 1 && hops < 64; hops++) {
    const inherited = readOrNull(`${procRoot}/${pid}/environ`)?.match(DEPTH_VAR);
    if (inherited) depth = Math.max(depth, Number(inherited[1]));
    const stat = readOrNull(`${procRoot}/${pid}/stat`);
    if (!stat) break;
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
    pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return depth;
}
