import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));
const STEP = 1000;

/**
 * Usage lines the runaway wrote after the stop of attempt `attempt` was decided (`task.budget_reached` says when;
 * the raw log keeps each line's own time). Lines written before it but still in the pipe are read and counted:
 * the worker spent them (on a loaded machine a leader reads a pipe late, so those vary).
 */
function linesAfterStop(id: string, attempt: number): number {
  const stop = listEvents(h.engine.db, { taskId: id, limit: 100_000 }).events.find((e) => e.type === 'task.budget_reached' && e.payload.attempt === attempt);
  if (!stop) throw new Error(`no budget stop of attempt ${attempt}`);
  const at = Number(stop.payload.at);
  // A resumed attempt writes into its session's run folder (the first attempt's): read every raw log of the task.
  const dir = join(h.engine.home.artifacts, id);
  const logs = readdirSync(dir).map((d) => join(dir, d, 'stdout.jsonl')).filter((f) => existsSync(f));
  return logs.flatMap((f) => readFileSync(f, 'utf8').split('\n')).filter((l) => Number(/"t":(\d+)/.exec(l)?.[1]) > at).length;
}

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

async function until<T>(what: string, fn: () => T | null | undefined | false, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Tokens the task's stored usage events add up to (input + output). */
function tokensOf(id: string): number {
  return listEvents(h.engine.db, { taskId: id, limit: 100_000 })
    .events.filter((e) => e.type === "worker.usage")
    .reduce((n, e) => n + Number(e.payload.inputTokens) + Number(e.payload.outputTokens), 0);
}

/** A home whose codex is the runaway script (endless usage, STEP tokens an event), with `budgets` in config. */
function runawayHome(budgets: string): string {
  h = makeHome();
  const pids = join(h.root, 'runaway.pids');
  h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "runaway", "${STEP}", ${JSON.stringify(pids)}]\nauth = "none"\n[scheduler]\nkill_grace_ms = 500\n[budgets]\n${budgets}\n`);
  return pids;
}

describe('budgets enforced while a task runs', () => {
  it('stops a runaway worker at max_tokens within one event, waits for a person, continues when raised and fails when stopped', async () => {
    const pids = runawayHome('max_tokens = 20000');
    const { task } = await h.call('delegate_task', { objective: 'burn tokens', kind: 'explore', workspace: h.repo, worker: 'codex', timeout_s: 120 });
    svc = await startSchedulerService(h.engine);
    await until('the budget request', () => getTask(h.engine.db, task.id)?.status === 'waiting_input');

    const shown = await h.call('get_task', { id: task.id });
    expect(shown.task.needs).toMatchObject({ kind: 'budget' });
    expect(shown.task.needs.asks).toMatch(/^budget of max_tokens reached: [\d,]+ of 20,000 tokens spent; raise it or stop$/);
    expect(shown.budget.limits).toEqual({ max_tokens: 20000 });
    // Stopped at the budget (or one step before it would cross): nothing written after the stop.
    const spent = tokensOf(task.id);
    expect(spent).toBeGreaterThanOrEqual(20000 - STEP);
    expect(linesAfterStop(task.id, 1)).toBe(0);
    expect(shown.budget.spent.tokens).toBe(spent);
    expect(shown.budget.spent.turns).toBe(1);
    // The worker's tree was swept, as a cancel does.
    const first = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    expect(first).toHaveLength(1);
    expect(alive(first[0])).toBe(false);

    // Raised by a person: a new attempt in the same session, stopped again at the new limit.
    const raised = await h.call('answer_task', { id: task.id, decision: 'allow', text: '30000' });
    expect(raised.request).toMatchObject({ kind: 'budget', decision: 'allow' });
    await until('the second budget request', () => {
      const t = getTask(h.engine.db, task.id);
      return t?.status === 'waiting_input' && t.attempt === 2;
    });
    expect(tokensOf(task.id)).toBeGreaterThanOrEqual(30000 - STEP);
    expect(linesAfterStop(task.id, 2)).toBe(0);
    expect((await h.call('get_task', { id: task.id })).task.needs.asks).toMatch(/of 30,000 tokens/);

    // Stopped by a person: failed, budget_exceeded.
    await h.call('answer_task', { id: task.id, decision: 'deny' });
    const ended = getTask(h.engine.db, task.id)!;
    expect(ended.status).toBe('failed');
    expect(ended.error?.code).toBe('budget_exceeded');
    expect(readFileSync(pids, 'utf8').trim().split('\n').map(Number).every((p) => !alive(p))).toBe(true);
  });

  it('fails the task budget_exceeded when config says so, and a submit flag lowers the limit', async () => {
    runawayHome('max_tokens = 50000\non_exceeded = "fail"');
    const { task } = await h.call('delegate_task', { objective: 'burn', kind: 'explore', workspace: h.repo, worker: 'codex', budget: { max_tokens: 8000 }, timeout_s: 120 });
    svc = await startSchedulerService(h.engine);
    const t = await until('the failure', () => {
      const x = getTask(h.engine.db, task.id);
      return x?.status === 'failed' ? x : null;
    });
    expect(t.error?.code).toBe('budget_exceeded');
    expect(t.error?.message).toMatch(/budget of max_tokens reached: [\d,]+ of 8,000 tokens/);
    expect(linesAfterStop(task.id, 1)).toBe(0);
  });

  it('lets an MCP host lower a configured limit but refuses a raise above it, naming the field', async () => {
    runawayHome('max_tokens = 20000\nmax_turns = 4');
    await expect(h.call('delegate_task', { objective: 'x', workspace: h.repo, budget: { max_tokens: 90000 } }, 'mcp')).rejects.toMatchObject({
      code: 'forbidden',
      details: { field: 'budget.max_tokens' },
    });
    await expect(h.call('delegate_batch', { tasks: [{ objective: 'x', workspace: h.repo, budget: { max_turns: 9 } }] }, 'mcp')).rejects.toMatchObject({ details: { field: "budget.max_turns" } });
    expect((await h.call('list_tasks')).tasks).toHaveLength(0);
    const lowered = await h.call('delegate_task', { objective: 'x', workspace: h.repo, worker: 'codex', kind: 'explore', budget: { max_tokens: 5000 } }, 'mcp');
    expect((await h.call('get_task', { id: lowered.task.id })).budget.limits).toEqual({ max_tokens: 5000, max_turns: 4 });
    // Answering over MCP: a raise within the ceiling continues; above it is refused, naming the field.
    svc = await startSchedulerService(h.engine);
    await until('the budget request', () => getTask(h.engine.db, lowered.task.id)?.status === 'waiting_input');
    await expect(h.call('answer_task', { id: lowered.task.id, decision: 'allow', text: '25000' }, 'mcp')).rejects.toMatchObject({ code: 'forbidden', details: { field: 'budget.max_tokens' } });
    expect(getTask(h.engine.db, lowered.task.id)!.status).toBe('waiting_input');
    const ok = await h.call('answer_task', { id: lowered.task.id, decision: 'allow', text: '12000' }, 'mcp');
    expect(ok.task.status).toBe('queued');
  });

  it('counts auto-repair turns against max_turns', async () => {
    h = makeHome();
    h.configure('[budgets]\nmax_turns = 2\n[verify]\nauto_repair = 3\n');
    const { task } = await h.call('delegate_task', { objective: 'never passes', kind: 'explore', workspace: h.repo, verify: ['false'] });
    svc = await startSchedulerService(h.engine);
    await until('the budget request', () => getTask(h.engine.db, task.id)?.status === 'waiting_input');
    const r = await h.call('get_task', { id: task.id });
    expect(r.task.needs.asks).toBe('budget of max_turns reached: 2 of 2 turns spent; raise it or stop');
    expect(r.budget.spent.turns).toBe(2);
    // The worker ran twice (first turn + one repair), never a third time.
    expect(listEvents(h.engine.db, { taskId: task.id, limit: 1000 }).events.filter((e) => e.type === 'worker.started')).toHaveLength(2);
  });
});
