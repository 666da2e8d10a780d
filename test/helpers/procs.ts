import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Poll `cond` until true; on timeout throw naming `what` (a function: described then, not when the wait began). */
export async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string), everyMs = 50): Promise<void> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => child.once('exit', (code) => r(code)));
}

/** Collect a child's stderr text as it arrives. */
export function captureStderr(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (c: string) => (text += c));
  return () => text;
}
