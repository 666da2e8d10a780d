import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Linux: every live descendant of `root` by parent links (catches those that left the group). */
export function descendantsOf(root: number): number[] {
  if (process.platform !== 'linux') return [];
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      // exited while we looked
    }
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    for (const c of children.get(stack.pop()!) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

function groupAlive(pgid: number, pids: number[]): boolean {
  return signal(-pgid, 0) || pids.some((p) => signal(p, 0));
}

/**
 * End the tree of a process started with `detached: true` (its own group, id = its pid): SIGTERM to
 * the group and every known descendant, then SIGKILL after `graceMs`, until nothing answers (a bounded
 * wait: a zombie nobody reaps must not hold a cancel forever). Windows: `taskkill /T /F`.
 */
export async function killTree(pid: number, graceMs: number): Promise<void> {
  if (process.platform === 'win32') {
    await new Promise((r) => execFile('taskkill', ['/PID', String(pid), '/T', '/F'], () => r(null)));
    return;
  }
  const known = new Set([pid, ...descendantsOf(pid)]);
  signal(-pid, 'SIGTERM');
  for (const p of known) signal(p, 'SIGTERM');
  const killAt = Date.now() + graceMs;
  const giveUpAt = killAt + 3000;
  while (groupAlive(pid, [...known]) && Date.now() < giveUpAt) {
    for (const p of descendantsOf(pid)) known.add(p);
    if (Date.now() >= killAt) {
      signal(-pid, 'SIGKILL');
      for (const p of known) signal(p, 'SIGKILL');
    }
    await sleep(25);
  }
}
