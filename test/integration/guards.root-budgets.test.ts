import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { runCli } from '../helpers/cli.js';
import { alive, linesAfterStop, tokensOf, until } from '../helpers/budget-probe.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const STEP = 1000;
/**
 * Events a loaded leader may still read after the tree's total was crossed: lines both runaways had already
 * written into their pipes before the stop (none written after it: `linesAfterStop` below is exact). Measured
 * up to 6 per tree with other test files running beside this one on 2 cores.
 */
const IN_FLIGHT = 8;

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

/**
 * A home whose codex is the runaway script (endless usage, STEP tokens an event every 40 ms: slow enough that a
 * loaded leader reading its pipes late stays within a few events of the stop).
 */
function runawayHome(extra: string): string {
  h = makeHome();
  const pids = join(h.root, 'runaway.pids');
  h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "runaway", "${STEP}", ${JSON.stringify(pids)}, "40"]\nauth = "none"\n[scheduler]\nkill_grace_ms = 500\nper_root = 2\n${extra}\n`);
  return pids;
}

const started = (pids: string) => readFileSync(pids, 'utf8').trim().split('\n').filter(Boolean).map(Number);

/** Three runaways in one tree (two run at once, per_root = 2), with `budget` on the tree. */
async function treeOfThree(budget: Record<string, number>): Promise<string[]> {
  const one = (n: number) => ({ objective: `burn ${n}`, kind: 'explore', workspace: h.repo, worker: 'codex', timeout_s: 120, budget });
  const r = await h.call('delegate_batch', { tasks: [one(1), one(2), one(3)] });
  return r.tasks.map((t: { id: string }) => t.id);
}

describe("a task tree's budget totals", () => {
  it('stops both running tasks when together they reach the tree total, starts no other, and continues the tree when a person raises it', async () => {
    const pids = runawayHome('');
    const ids = await treeOfThree({ root_max_tokens: 30_000 });
    const root = getTask(h.engine.db, ids[0])!.rootId;
    svc = await startSchedulerService(h.engine);
    const [a, b] = await until('two budget requests', () => {
      const waiting = ids.filter((id) => getTask(h.engine.db, id)?.status === 'waiting_input');
      return waiting.length === 2 ? waiting : null;
    });
    const third = ids.find((id) => id !== a && id !== b)!;

    // Together, not each: neither reached 30,000 alone, the tree did (a few events past it at most: what each had
    // written before the stop; summed from the store alone it would be each task's 30,000 or more).
    const spent = tokensOf(h.engine.db, a) + tokensOf(h.engine.db, b);
    expect(tokensOf(h.engine.db, a)).toBeLessThan(30_000);
    expect(tokensOf(h.engine.db, b)).toBeLessThan(30_000);
    expect(spent).toBeGreaterThanOrEqual(30_000 - IN_FLIGHT * STEP);
    expect(spent).toBeLessThanOrEqual(30_000 + IN_FLIGHT * STEP);
    expect(linesAfterStop(h.engine.db, h.engine.home.artifacts, a, 1)).toBe(0);
    expect(linesAfterStop(h.engine.db, h.engine.home.artifacts, b, 1)).toBe(0);
    expect(started(pids).every((p) => !alive(p))).toBe(true);

    const shown = await h.call('get_task', { id: a });
    expect(shown.task.needs.asks).toMatch(/^budget of root_max_tokens reached: [\d,]+ of 30,000 tokens spent by the task tree; raise it or stop$/);
    expect(shown.budget.root).toMatchObject({ id: root, limits: { root_max_tokens: 30_000 } });
    expect(shown.budget.root.spent.tokens).toBe(spent);

    // The third never started, and says why.
    const q = await h.call('get_task', { id: third });
    expect(q.task.status).toBe('queued');
    expect(q.task.waitingFor).toMatch(/budget of root_max_tokens reached: .* no task of the tree starts until a person raises it \(lightworker answer \w+ --allow/);
    expect(started(pids)).toHaveLength(2);

    // Raised on one request: the tree's total moves, both stopped tasks continue, and the third may start.
    const raised = await h.call('answer_task', { id: a, decision: 'allow', text: '60000' });
    expect(raised.request).toMatchObject({ kind: 'budget', decision: 'allow' });
    expect(getTask(h.engine.db, b)!.status).not.toBe('waiting_input');
    await until('the tree stopped again at 60,000', () => {
      const w = ids.filter((id) => getTask(h.engine.db, id)?.status === 'waiting_input');
      return w.length >= 2 && ids.every((id) => getTask(h.engine.db, id)!.status !== 'running' && getTask(h.engine.db, id)!.status !== 'starting') ? w : null;
    });
    const total = ids.reduce((n, id) => n + tokensOf(h.engine.db, id), 0);
    expect(total).toBeLessThanOrEqual(60_000 + IN_FLIGHT * STEP);
    expect(total).toBeGreaterThanOrEqual(60_000 - IN_FLIGHT * STEP);
    await svc.stop();
    svc = null;
    const out = await runCli(['show', a], { home: h.home });
    expect(out.stdout).toMatch(/tree: +tokens [\d,]+\/60,000/);
  });

  it('fails every running task of the tree budget_exceeded when config says so, and what starts later fails before its worker runs', async () => {
    const pids = runawayHome('[budgets]\nroot_max_tokens = 20000\non_exceeded = "fail"');
    const ids = await treeOfThree({ max_tokens: 50_000 });
    svc = await startSchedulerService(h.engine);
    const ended = await until('all three ended', () => {
      const ts = ids.map((id) => getTask(h.engine.db, id)!);
      return ts.every((t) => t.status === 'failed') ? ts : null;
    });
    for (const t of ended) {
      expect(t.error?.code).toBe('budget_exceeded');
      expect(t.error?.message).toMatch(/budget of root_max_tokens reached: [\d,]+ of 20,000 tokens spent by the task tree/);
    }
    // Two ran; the third was stopped before its worker started.
    expect(started(pids)).toHaveLength(2);
    const total = ids.reduce((n, id) => n + tokensOf(h.engine.db, id), 0);
    expect(total).toBeLessThanOrEqual(20_000 + IN_FLIGHT * STEP);
  });

  it('lets an MCP host lower a tree total but refuses one above the configured ceiling, naming the field', async () => {
    runawayHome('[budgets]\nroot_max_tokens = 100000');
    await expect(h.call('delegate_batch', { tasks: [{ objective: 'x', workspace: h.repo, budget: { root_max_tokens: 200_000 } }] }, 'mcp')).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'budget.root_max_tokens' },
    });
    const ok = await h.call('delegate_task', { objective: 'x', workspace: h.repo, budget: { root_max_tokens: 5000 } }, 'mcp');
    expect((await h.call('get_task', { id: ok.task.id })).budget.root.limits).toEqual({ root_max_tokens: 5000 });
  });
});
