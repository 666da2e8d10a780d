import type { TreeNode } from '../commands/tasks.js';
import type { Engine } from '../engine.js';
import { waitTasks, type WaitResult } from '../scheduler/wait.js';
import type { TaskSummary } from '../tasks/summary.js';
import { describeCounts, type StatusLine } from './progress.js';

type Call = (name: string, input?: unknown) => Promise<unknown>;

/** The status of the tasks a command waits for: one task by name and state, several as counts. */
export function describeWaited(tasks: TaskSummary[], label = 'waiting'): string {
  if (tasks.length === 1) {
    const t = tasks[0];
    const waiting = t.waitingOn?.length ? ` (waiting on approval of ${t.waitingOn.join(', ')})` : '';
    return `${label}: ${t.id.slice(0, 8)} ${t.status.replace('_', ' ')}${waiting} · ${t.kind} on ${t.worker} · ${t.name}`;
  }
  const counts: Record<string, number> = {};
  for (const t of tasks) counts[t.status] = (counts[t.status] ?? 0) + 1;
  return `${label}: ${tasks.length} tasks · ${describeCounts(counts)}`;
}

const MOVING = new Set(['queued', 'starting', 'running', 'verifying']);

/**
 * The snapshot callback that keeps the status line current, and says once (above it) when tasks wait
 * for a scheduler that no process runs — nothing would move.
 */
async function statusUpdater(call: Call, line: StatusLine, label?: string): Promise<(tasks: TaskSummary[]) => void> {
  const { leader } = (await call('scheduler_status', {})) as { leader: unknown };
  let told = Boolean(leader);
  return (tasks) => {
    if (!told && tasks.some((t) => MOVING.has(t.status))) {
      told = true;
      line.note('no scheduler is running in this home; start one with `lightworker run` (or `serve`)');
    }
    line.set(describeWaited(tasks, label));
  };
}

/** `waitTasks` with the status line kept up to date; the line is stopped before this returns. */
export async function waitWithStatus(engine: Engine, call: Call, ids: string[], timeoutMs: number, line: StatusLine, label?: string): Promise<WaitResult> {
  try {
    return await waitTasks(engine, ids, timeoutMs, undefined, await statusUpdater(call, line, label));
  } finally {
    line.stop();
  }
}

function flatten(nodes: TreeNode[]): string[] {
  return nodes.flatMap((n) => [n.id, ...flatten(n.children)]);
}

/**
 * Wait for a whole task tree — a planner whose plan adds children as it completes, or a comparison's
 * candidates and reviews — until every task in it has ended or one needs a person. The tree is read
 * again after each settle, so children added meanwhile are waited for too.
 */
export async function waitForTree(engine: Engine, call: Call, id: string, timeoutMs: number, line: StatusLine, label?: string): Promise<WaitResult> {
  const deadline = Date.now() + timeoutMs;
  try {
    const update = await statusUpdater(call, line, label);
    let ids = flatten(((await call('get_task_tree', { id })) as { roots: TreeNode[] }).roots);
    for (;;) {
      const r = await waitTasks(engine, ids, Math.max(0, deadline - Date.now()), undefined, update);
      if (r.reason !== 'settled') return r;
      const now = flatten(((await call('get_task_tree', { id })) as { roots: TreeNode[] }).roots);
      if (now.length === ids.length) return r;
      ids = now;
    }
  } finally {
    line.stop();
  }
}
