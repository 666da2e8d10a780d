import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../../main/store/db.js';
import { listEvents } from '../../main/store/events.js';

/** Poll `fn` until it returns something truthy (a condition, never a sleep). */
export async function until<T>(what: string, fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Tokens the task's stored usage events add up to (input + output). */
export function tokensOf(db: Db, id: string): number {
  return listEvents(db, { taskId: id, limit: 100_000 })
    .events.filter((e) => e.type === 'worker.usage')
    .reduce((n, e) => n + Number(e.payload.inputTokens) + Number(e.payload.outputTokens), 0);
}

/**
 * Usage lines a runaway (test/fixtures/guards/scripted-codex.mjs) wrote after the stop of attempt `attempt` was
 * decided (`task.budget_reached` says when; the raw log keeps each line's own time).
 */
export function linesAfterStop(db: Db, artifacts: string, id: string, attempt: number): number {
  const stop = listEvents(db, { taskId: id, limit: 100_000 }).events.find((e) => e.type === 'task.budget_reached' && e.payload.attempt === attempt);
  if (!stop) throw new Error(`no budget stop of attempt ${attempt}`);
  const at = Number(stop.payload.at);
  const dir = join(artifacts, id);
  const logs = readdirSync(dir).map((d) => join(dir, d, 'stdout.jsonl')).filter((f) => existsSync(f));
  return logs.flatMap((f) => readFileSync(f, 'utf8').split('\n')).filter((l) => Number(/"t":(\d+)/.exec(l)?.[1]) > at).length;
}

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
