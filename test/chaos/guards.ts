// Scenario: guards for unattended work. In one home led by an in-process scheduler, with the built-in codex
// worker replaced by the scripted fake (test/fixtures/guards/scripted-codex.mjs):
// - runaways: tasks whose worker reports usage endlessly (1,000 tokens an event, every 5 ms), each under its
//   own max_tokens; half wait for a person when the budget is reached, half fail budget_exceeded. Measured:
//   tokens stored past each budget, in events; runaways never stopped; processes of them still alive.
// - rate limits: tasks whose worker is refused with a 429 naming a 1 s reset on its first runs. Measured:
//   tasks that failed (must be 0), retries spent, how long they waited.
// - gateway rate limits and fallback routes: guards-gateways.ts.
// - flapping: a worker that crashes (503, no JSON) while a file exists, removed after a few seconds. Measured:
//   how often its breaker opened, tasks started while it was open (beyond the one probe), tasks left failed.
// - tree totals and memory admission: guards-trees.ts.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { activePause } from '../../main/scheduler/worker-pauses.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { sleep } from './rng.js';
import { runTreeGuards, type TreeGuardFigures } from './guards-trees.js';
import { runGatewayLimits, type GatewayLimitFigures } from './guards-gateways.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const STEP = 1000;

export interface GuardsOptions {
  /** Runaway tasks (each under its own token budget). */
  runaways: number;
  /** Rate-limited tasks. */
  limited: number;
  /** Tasks given to the flapping worker. */
  flaps: number;
  log: (line: string) => void;
}

export interface GuardsFigures extends TreeGuardFigures, GatewayLimitFigures {
  runaways: number;
  /** Tokens stored past each runaway's budget (input + output). */
  pastBudget: number[];
  /** Usage lines each runaway wrote after its stop was decided (the rest past the budget were already in the pipe). */
  afterStop: number[];
  /** Runaways never stopped, or that wrote more than one line after the stop. */
  notStopped: number;
  survivors: number;
  limited: number;
  rateLimitFailures: number;
  rateLimitRequeues: number;
  retriesSpent: number;
  flaps: number;
  breakerOpenings: number;
  startsWhileOpen: number;
  flapsFailed: number;
  flapsCompleted: number;
  notes: string[];
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Usage lines the runaway wrote after its run was stopped (`task.budget_reached` says when). */
function linesAfterStop(h: TestHome, id: string): number {
  const stop = listEvents(h.engine.db, { taskId: id, limit: 1_000_000 }).events.find((e) => e.type === 'task.budget_reached');
  const at = Number(stop?.payload.at);
  if (!stop || !at) return Infinity;
  const log = join(h.engine.home.artifacts, id, `attempt-${stop.payload.attempt}`, 'stdout.jsonl');
  return readFileSync(log, 'utf8').split('\n').filter((l) => Number(/"t":(\d+)/.exec(l)?.[1]) > at).length;
}

function tokensOf(h: TestHome, id: string): number {
  return listEvents(h.engine.db, { taskId: id, limit: 1_000_000 }).events.filter((e) => e.type === 'worker.usage').reduce((n, e) => n + Number(e.payload.inputTokens) + Number(e.payload.outputTokens), 0);
}

/** Each part in a home of its own, led by an in-process scheduler; figures as a user would see them. */
export async function runGuards(o: GuardsOptions): Promise<GuardsFigures> {
  const notes: string[] = [];
  const run = await runaways(o, notes);
  const lim = await rateLimits(o);
  const gateways = await runGatewayLimits(Math.max(3, o.limited));
  const flap = await flapping(o, notes);
  const trees = await runTreeGuards(Math.max(1, Math.ceil(o.runaways / 4)), o.runaways);
  return { ...run, ...lim, ...gateways, ...flap, ...trees, notes };
}

async function runaways(o: GuardsOptions, notes: string[]) {
  const ask = await runawayHome(Math.ceil(o.runaways / 2), 'ask', 0);
  const fail = await runawayHome(Math.floor(o.runaways / 2), 'fail', 1);
  notes.push(`runaways: ${ask.ended} of ${ask.n} waited for a person (on_exceeded = "ask"), ${fail.ended} of ${fail.n} failed budget_exceeded ("fail")`);
  return { runaways: ask.n + fail.n, pastBudget: [...ask.pastBudget, ...fail.pastBudget], afterStop: [...ask.afterStop, ...fail.afterStop], notStopped: ask.notStopped + fail.notStopped, survivors: ask.survivors + fail.survivors };
}

/** `n` runaways under budgets of 5k to 24k tokens, in a home whose [budgets] on_exceeded is `mode`. */
async function runawayHome(n: number, mode: 'ask' | 'fail', salt: number) {
  const h = makeHome();
  const want = mode === 'ask' ? 'waiting_input' : 'failed';
  try {
    const pids = join(h.root, 'runaway.pids');
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "runaway", "${STEP}", ${JSON.stringify(pids)}, "5"]\nauth = "none"\nmax_concurrency = 4\n[scheduler]\nkill_grace_ms = 500\n[budgets]\non_exceeded = "${mode}"\n`);
    const tasks: { id: string; limit: number }[] = [];
    for (let i = 0; i < n; i++) {
      const limit = 5000 + (((i * 2 + salt) * 7919) % 20) * 1000;
      const { task } = await h.call('delegate_task', { objective: `runaway ${i}`, kind: 'explore', workspace: h.repo, worker: 'codex', budget: { max_tokens: limit }, timeout_s: 120 });
      tasks.push({ id: task.id, limit });
    }
    const svc = await startSchedulerService(h.engine);
    try {
      const end = Date.now() + 120_000;
      while (Date.now() < end && tasks.some((t) => getTask(h.engine.db, t.id)!.status !== want)) await sleep(50);
    } finally {
      await svc.stop();
    }
    const pastBudget = tasks.map((t) => Math.max(0, tokensOf(h, t.id) - t.limit));
    const ended = tasks.filter((t) => getTask(h.engine.db, t.id)!.status === want).length;
    // Written by the worker after the stop was decided (its raw log keeps each line's own time): what the stop let through.
    const afterStop = tasks.map((t) => linesAfterStop(h, t.id));
    let survivors = 0;
    try {
      survivors = readFileSync(pids, 'utf8').trim().split('\n').map(Number).filter(alive).length;
    } catch {
      // no runaway started (n = 0)
    }
    return { n, ended, pastBudget, afterStop, notStopped: n - ended + afterStop.filter((a) => a > 1).length, survivors };
  } finally {
    h.cleanup();
  }
}

async function rateLimits(o: GuardsOptions) {
  const h = makeHome();
  try {
    const state = join(h.root, 'limited');
    // The first half of the runs are refused (429, "try again in 1s"); no retries to spend.
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "limited", ${JSON.stringify(state)}, "${Math.max(1, Math.floor(o.limited / 2))}", "1"]\nauth = "none"\nmax_concurrency = 2\n[limits]\nretry_budget = 0\n`);
    const ids: string[] = [];
    for (let i = 0; i < o.limited; i++) ids.push((await h.call('delegate_task', { objective: `limited ${i}`, kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id);
    const svc = await startSchedulerService(h.engine);
    try {
      await waitTasks(h.engine, ids, 120_000);
    } finally {
      await svc.stop();
    }
    const tasks = ids.map((id) => getTask(h.engine.db, id)!);
    const events = ids.flatMap((id) => listEvents(h.engine.db, { taskId: id, limit: 10_000 }).events);
    return {
      limited: ids.length,
      rateLimitFailures: tasks.filter((t) => t.status !== 'completed').length,
      rateLimitRequeues: events.filter((e) => e.type === 'task.rate_limited').length,
      retriesSpent: tasks.reduce((n, t) => n + t.attempt - 1, 0),
    };
  } finally {
    h.cleanup();
  }
}

export async function flapping(o: GuardsOptions, notes: string[]) {
  const h = makeHome();
  try {
    const broken = join(h.root, 'broken');
    writeFileSync(broken, '');
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "flap", ${JSON.stringify(broken)}]\nauth = "none"\nmax_concurrency = 3\n[breaker]\nfailures = 3\ncooldown_s = 1\n`);
    const ids: string[] = [];
    for (let i = 0; i < o.flaps; i++) ids.push((await h.call('delegate_task', { objective: `flap ${i}`, kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id);
    // Each opening sets a pause with its own end; a start while one is in force would be a breach. Events are
    // published after later writes may have landed, so a pause set after the start (its `since`) is no breach.
    const openings = new Set<number>();
    let startsWhileOpen = 0;
    h.engine.events.on('event', (e) => {
      if (e.type !== 'task.status') return;
      const p = activePause(h.engine.db, 'codex', e.ts);
      if (p?.cause === 'breaker') openings.add(p.until);
      if (e.payload.to === 'starting' && p && (p.since ?? 0) <= e.ts) startsWhileOpen++;
    });
    const svc = await startSchedulerService(h.engine);
    const repair = setTimeout(() => rmSync(broken, { force: true }), 4000);
    try {
      await waitTasks(h.engine, ids, 120_000);
    } finally {
      clearTimeout(repair);
      await svc.stop();
    }
    const tasks = ids.map((id) => getTask(h.engine.db, id)!);
    const first = tasks.filter((t) => t.status === 'failed').map((t) => t.error?.message ?? '');
    notes.push(`flapping worker: ${first.length} tasks failed while it crashed, ${tasks.filter((t) => t.status === 'completed').length} completed after it was repaired`);
    return { flaps: ids.length, breakerOpenings: openings.size, startsWhileOpen, flapsFailed: first.length, flapsCompleted: tasks.filter((t) => t.status === 'completed').length };
  } finally {
    h.cleanup();
  }
}
