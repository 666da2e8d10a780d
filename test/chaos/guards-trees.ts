// Part of the guards scenario (test/chaos/guards.ts): a task tree's budget totals and memory-aware admission.
// - tree totals: trees of three runaways (1,000 tokens an event every 5 ms), two running at once (per_root = 2; 4 in all),
//   each tree under root_max_tokens only: the two together reach it. Measured: tokens stored past each tree's
//   total, usage lines written after a stop, trees not stopped, tasks of a tree started after it reached its total.
// - memory: a fake meminfo (LIGHTWORKER_MEMINFO) says 300 MiB are free under a 512 MiB floor while tasks are
//   queued, then 100,000. Measured: tasks started while it said short (must be 0), tasks that completed after.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSchedulerService } from '../../main/app.js';
import { MEMINFO_ENV } from '../../main/platform/proc/memory.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { sleep } from './rng.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const STEP = 1000;

export interface TreeGuardFigures {
  trees: number;
  /** Tokens stored past each tree's total (all its tasks, input + output). */
  treePastBudget: number[];
  /** Usage lines a tree's tasks wrote after their stop was decided (max over the tree). */
  treeAfterStop: number[];
  /** Trees whose running tasks were not all stopped, or wrote more than one line each after the stop. */
  treesNotStopped: number;
  /** Tasks of a tree that started after the tree reached its total (a person had not raised it). */
  treeStartsAfterTotal: number;
  memoryHeld: number;
  memoryStartsBelowFloor: number;
  memoryCompleted: number;
}

function tokensOf(h: TestHome, id: string): number {
  return listEvents(h.engine.db, { taskId: id, limit: 1_000_000 }).events.filter((e) => e.type === 'worker.usage').reduce((n, e) => n + Number(e.payload.inputTokens) + Number(e.payload.outputTokens), 0);
}

/** When the task's (first) budget stop was decided, and the usage lines its worker wrote after it. */
function stopOf(h: TestHome, id: string): { at: number; after: number } | null {
  const stop = listEvents(h.engine.db, { taskId: id, limit: 1_000_000 }).events.find((e) => e.type === 'task.budget_reached');
  const at = Number(stop?.payload.at);
  if (!stop || !at) return null;
  const log = join(h.engine.home.artifacts, id, `attempt-${stop.payload.attempt}`, 'stdout.jsonl');
  // Stopped before its worker wrote anything (its sibling reached the total as it started): nothing after.
  if (!existsSync(log)) return { at, after: 0 };
  return { at, after: readFileSync(log, 'utf8').split('\n').filter((l) => Number(/"t":(\d+)/.exec(l)?.[1]) > at).length };
}

export async function runTreeGuards(trees: number, tasks: number): Promise<TreeGuardFigures> {
  return { ...(await treeTotals(trees)), ...(await memoryFloor(tasks)) };
}

async function treeTotals(n: number): Promise<Pick<TreeGuardFigures, 'trees' | 'treePastBudget' | 'treeAfterStop' | 'treesNotStopped' | 'treeStartsAfterTotal'>> {
  const h = makeHome();
  try {
    const pids = join(h.root, 'runaway.pids');
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "runaway", "${STEP}", ${JSON.stringify(pids)}, "5"]\nauth = "none"\nmax_concurrency = 4\n[scheduler]\nkill_grace_ms = 500\nper_root = 2\nper_repository = 4\nmax_concurrency = 4\n`);
    const made: { ids: string[]; limit: number }[] = [];
    for (let i = 0; i < n; i++) {
      const limit = 10_000 + ((i * 7919) % 15) * 1000;
      const one = (k: number) => ({ objective: `tree ${i} runaway ${k}`, kind: 'explore', workspace: h.repo, worker: 'codex', timeout_s: 120, budget: { root_max_tokens: limit } });
      const r = await h.call('delegate_batch', { tasks: [one(0), one(1), one(2)] });
      made.push({ ids: r.tasks.map((t: { id: string }) => t.id), limit });
    }
    const starts = new Map<string, number>();
    h.engine.events.on('event', (e) => {
      if (e.type === 'task.status' && e.payload.to === 'starting' && e.taskId) starts.set(e.taskId, e.ts);
    });
    const svc = await startSchedulerService(h.engine);
    // Done when every tree has a task waiting for a person and none running (a tree stopped before its second
    // task got a slot has one waiting; its other tasks stay queued).
    const settled = () => made.every((t) => t.ids.some((id) => getTask(h.engine.db, id)!.status === 'waiting_input') && t.ids.every((id) => !['starting', 'running', 'verifying'].includes(getTask(h.engine.db, id)!.status)));
    try {
      const end = Date.now() + 120_000;
      while (Date.now() < end && !settled()) await sleep(50);
    } finally {
      await svc.stop();
    }
    let notStopped = 0;
    let startsAfter = 0;
    const past: number[] = [];
    const after: number[] = [];
    for (const t of made) {
      past.push(Math.max(0, t.ids.reduce((s, id) => s + tokensOf(h, id), 0) - t.limit));
      const started = t.ids.filter((id) => starts.has(id));
      const stops = started.map((id) => stopOf(h, id));
      after.push(Math.max(0, ...stops.map((s) => s?.after ?? 0)));
      // Every task of the tree that started was stopped by the total, writing at most one line after it.
      if (!started.length || stops.some((s) => s === null || s.after > 1)) notStopped++;
      const first = Math.min(...stops.map((s) => s?.at ?? Infinity));
      startsAfter += t.ids.filter((id) => (starts.get(id) ?? 0) > first).length;
    }
    return { trees: n, treePastBudget: past, treeAfterStop: after, treesNotStopped: notStopped, treeStartsAfterTotal: startsAfter };
  } finally {
    h.cleanup();
  }
}

async function memoryFloor(n: number): Promise<Pick<TreeGuardFigures, 'memoryHeld' | 'memoryStartsBelowFloor' | 'memoryCompleted'>> {
  const h = makeHome();
  const before = process.env[MEMINFO_ENV];
  const meminfo = join(h.root, 'meminfo');
  const setFree = (mib: number) => writeFileSync(meminfo, `MemTotal: 99999999 kB\nMemAvailable: ${mib * 1024} kB\n`);
  process.env[MEMINFO_ENV] = meminfo;
  try {
    setFree(300);
    h.configure('[scheduler]\nmin_free_mib = 512\nmax_concurrency = 4\n');
    let low = true;
    let belowFloor = 0;
    h.engine.events.on('event', (e) => {
      if (e.type === 'task.status' && e.payload.to === 'starting' && low) belowFloor++;
    });
    const svc = await startSchedulerService(h.engine);
    const ids: string[] = [];
    let held = 0;
    try {
      // Two rounds: short while the tasks are queued (each must say it waits for memory), then room again.
      for (let round = 0; round < 2; round++) {
        setFree(300);
        low = true;
        const batch: string[] = [];
        for (let i = 0; i < Math.ceil(n / 2); i++) batch.push((await h.call('delegate_task', { objective: `memory ${round}.${i}`, kind: 'explore', workspace: h.repo })).task.id);
        const end = Date.now() + 30_000;
        const waiting = async () => (await Promise.all(batch.map(async (id) => (await h.call('get_task', { id })).task))).filter((t) => t.status === 'queued' && /^waiting for memory/.test(t.waitingFor ?? '')).length;
        let w = 0;
        while (Date.now() < end && (w = await waiting()) < batch.length) await sleep(50);
        held += w;
        low = false;
        setFree(100_000);
        await waitTasks(h.engine, batch, 60_000);
        ids.push(...batch);
      }
    } finally {
      await svc.stop();
    }
    return { memoryHeld: held, memoryStartsBelowFloor: belowFloor, memoryCompleted: ids.filter((id) => getTask(h.engine.db, id)!.status === 'completed').length };
  } finally {
    if (before === undefined) delete process.env[MEMINFO_ENV];
    else process.env[MEMINFO_ENV] = before;
    h.cleanup();
  }
}
