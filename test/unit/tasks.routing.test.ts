import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listCandidates, claimTask } from '../../main/store/claims.js';
import { listEvents } from '../../main/store/events.js';
import { getTask, listTasks } from '../../main/store/tasks.js';
import { getRootBudget } from '../../main/tasks/budget.js';
import { COMMANDS } from '../../main/commands/index.js';
import { buildTools } from '../../main/mcp/tools.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';

// Routing (docs/auth-and-routing.md): workflow types pick a profile and worker by cost rank, deeper_profile climbs
// an escalation chain, fallback_gateway rotates gateways, and per-root budgets bound a task tree.

let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

const submit = async (input: Record<string, unknown>) => (await h.call('delegate_task', { objective: 'do it', workspace: h.repo, ...input })).task;
/** End a queued task (cancelled is retryable) so it can be retried. */
const end = async (id: string) => (await h.call('cancel_task', { id })).task;
const retry = (id: string, strategy: string) => h.call('retry_task', { id, strategy });

describe('workflow types choose a worker and profile by cost rank', () => {
  it('chore runs on the cheapest adequate profile; explicit values win; other types use routing.types', async () => {
    h.configure(`
[profiles.budget]
cost = 1
worker = "opencode"
kinds = ["execute"]

[profiles.phantom]
cost = 0
worker = "ghost"
kinds = ["explore", "execute"]

[routing]
types = { chore = "cheapest", feature = "deep_worker" }
`);
    // execute: "budget" (cost 1) beats fast_worker (10); "phantom" is cheaper but its worker does not exist.
    const exec = await submit({ kind: 'execute', type: 'chore' });
    expect([exec.profile, exec.worker]).toEqual(['budget', 'opencode']);
    // explore: "budget" cannot run it, so fast_worker (cost 10) on the default worker.
    const explore = await submit({ kind: 'explore', type: 'chore' });
    expect([explore.profile, explore.worker]).toEqual(['fast_worker', 'mock']);
    const created = listEvents(h.engine.db, { taskId: exec.id, types: ['task.created'] }).events[0];
    expect(created.payload.routedBy).toMatch(/cheapest adequate profile budget \(cost 1\) on opencode/);
    // Explicit values win.
    const mine = await submit({ kind: 'execute', type: 'chore', worker: 'mock' });
    expect([mine.profile, mine.worker]).toEqual([null, 'mock']);
    const feature = await submit({ kind: 'explore', type: 'feature' });
    expect(feature.profile).toBe('deep_worker');
    // hotfix is not routed.
    expect((await submit({ kind: 'explore', type: 'hotfix' })).profile).toBeNull();
  });

  it('a type routed to an unknown profile is refused naming the field, and creates nothing', async () => {
    h.configure('[routing]\ntypes = { chore = "nope" }\n');
    await expect(submit({ type: 'chore' })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/^type: .*unknown profile "nope"/) });
    expect(listTasks(h.engine.db, {})).toEqual([]);
  });
});

describe('retry strategies', () => {
  it('deeper_profile moves to the next profile of the escalation chain (effort, model, worker), then refuses at its end', async () => {
    h.configure(`
[models]
allow = ["gpt-5.5", "gpt-5.5-mini", "claude-sonnet-4-5", "claude-haiku-4-5", "mock-model"]

[profiles.expert]
worker = "claude-code"
model = "claude-sonnet-4-5"
reasoning_effort = "xhigh"
kinds = ["explore", "execute"]

[routing]
escalation = ["fast_worker", "deep_worker", "expert"]
`);
    const t = await submit({ kind: 'explore', profile: 'fast_worker' });
    await end(t.id);
    let r = (await retry(t.id, 'deeper_profile')).task;
    expect([r.profile, r.reasoningEffort, r.model, r.worker, r.attempt]).toEqual(['deep_worker', 'high', null, 'mock', 2]);
    await end(t.id);
    r = (await retry(t.id, 'deeper_profile')).task;
    expect([r.profile, r.reasoningEffort, r.model, r.worker]).toEqual(['expert', 'xhigh', 'claude-sonnet-4-5', 'claude-code']);
    const status = listEvents(h.engine.db, { taskId: t.id, types: ['task.status'] }).events.at(-1)!;
    expect(status.payload).toMatchObject({ strategy: 'deeper_profile', route: { profile: 'expert', worker: 'claude-code' } });
    await end(t.id);
    await expect(retry(t.id, 'deeper_profile')).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/expert is the last in routing\.escalation \(fast_worker → deep_worker → expert\)/) });
    expect(getTask(h.engine.db, t.id)!.status).toBe('cancelled');
  });

  it('deeper_profile without a profile starts at the first chain profile above the task effort, skipping ones that cannot run the kind', async () => {
    h.configure('[routing]\nescalation = ["fast_worker", "reviewer", "deep_worker"]\n');
    const t = await submit({ kind: 'execute', mode: 'auto_execute', reasoning_effort: 'medium' });
    await end(t.id);
    const r = (await retry(t.id, 'deeper_profile')).task;
    expect([r.profile, r.reasoningEffort]).toEqual(['deep_worker', 'high']); // reviewer cannot run execute
  });

  it('fallback_gateway rotates through the configured gateways, and needs another one', async () => {
    h.configure('[gateways.a]\nbase_url = "http://127.0.0.1:1/v1"\nkey_env = "A_KEY"\n[gateways.b]\nbase_url = "http://127.0.0.1:2/v1"\nkey_env = "B_KEY"\n');
    const t = await submit({ gateway: 'a' });
    await end(t.id);
    expect((await retry(t.id, 'fallback_gateway')).task.gateway).toBe('b');
    await end(t.id);
    expect((await retry(t.id, 'fallback_gateway')).task.gateway).toBe('a');
    h.configure('[gateways.a]\nbase_url = "http://127.0.0.1:1/v1"\nkey_env = "A_KEY"\n');
    await end(t.id);
    await expect(retry(t.id, 'fallback_gateway')).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/another gateway/) });
  });
});

describe('per-root budgets', () => {
  it('a tree\'s own retry budget replaces limits.retry_budget; other trees keep the default', async () => {
    const t = await submit({ budget: { retries: 1 } });
    expect(getRootBudget(h.engine.db, t.rootId)).toEqual({ retries: 1 });
    await end(t.id);
    await retry(t.id, 'same');
    await end(t.id);
    await expect(retry(t.id, 'same')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringMatching(/used up \(1 of 1, this tree's budget\)/) });
    const other = await submit({});
    for (let i = 0; i < 3; i++) {
      await end(other.id);
      await retry(other.id, 'same');
    }
    await end(other.id);
    await expect(retry(other.id, 'same')).rejects.toMatchObject({ message: expect.stringMatching(/3 of 3, limits\.retry_budget/) });
  });

  it('attempts bound each task of the tree', async () => {
    const t = await submit({ budget: { attempts: 2, retries: 10 } });
    await end(t.id);
    await retry(t.id, 'same');
    await end(t.id);
    await expect(retry(t.id, 'same')).rejects.toMatchObject({ code: 'forbidden', message: expect.stringMatching(/2 of the 2 attempts/) });
  });

  it('concurrency bounds how many tasks of the tree the scheduler runs at once', async () => {
    const { tasks } = await h.call('delegate_batch', {
      tasks: [1, 2, 3].map((n) => ({ ref: `t${n}`, objective: `task ${n}`, workspace: h.repo, budget: { concurrency: 1 } })),
    });
    const limits = { perRoot: 2, perRepository: 10 };
    expect(listCandidates(h.engine.db, limits, [])).toHaveLength(3);
    h.engine.write(() => claimTask(h.engine.db, tasks[0].id, 'runner-1'));
    expect(listCandidates(h.engine.db, limits, [])).toHaveLength(0);
    // A tree without a budget keeps scheduler.per_root.
    const free = await h.call('delegate_batch', { tasks: [1, 2, 3].map((n) => ({ objective: `free ${n}`, workspace: h.repo })) });
    h.engine.write(() => claimTask(h.engine.db, free.tasks[0].id, 'runner-1'));
    expect(listCandidates(h.engine.db, limits, []).map((c) => c.rootId)).toEqual([free.tasks[0].rootId, free.tasks[0].rootId]);
  });

  it('submit and orchestrate set it from --max-* flags; MCP lists it once, on delegate_task', { timeout: 60_000 }, async () => {
    const r = await runCli(['submit', 'x', '--workspace', h.repo, '--max-concurrency', '1', '--max-retries', '0', '--json'], { home: h.home });
    expect(r.code, r.stderr).toBe(0);
    expect(getRootBudget(h.engine.db, JSON.parse(r.stdout).task.rootId)).toEqual({ concurrency: 1, retries: 0 });
    const o = await runCli(['orchestrate', 'a goal', '--workspace', h.repo, '--max-attempts', '2', '--json'], { home: h.home });
    expect(o.code, o.stderr).toBe(0);
    expect(getRootBudget(h.engine.db, JSON.parse(o.stdout).task.rootId)).toEqual({ attempts: 2 });
    const bad = await runCli(['submit', 'x', '--workspace', h.repo, '--max-concurrency', '0'], { home: h.home });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/budget\.concurrency|max-concurrency/);
    const tools = buildTools(COMMANDS);
    // Listed once, on delegate_task (the initialize instructions say the others take it too): tools/list's size.
    expect(JSON.stringify(tools.find((t) => t.name === 'delegate_task')!.inputSchema)).toContain('budget');
    for (const name of ['delegate_batch', 'orchestrate_goal']) expect(JSON.stringify(tools.find((t) => t.name === name)!.inputSchema)).not.toContain('budget');
    const viaMcp = await h.call('delegate_task', { objective: 'y', workspace: h.repo, budget: { retries: 2 } }, 'mcp');
    expect(getRootBudget(h.engine.db, viaMcp.task.rootId)).toEqual({ retries: 2 });
  });

  it('a budget only comes with a new tree: a task joining one is refused, changing nothing', async () => {
    const root = await submit({});
    await expect(submit({ depends_on: [root.id], budget: { retries: 0 } })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/^budget: .*joins tree/) });
    expect(listTasks(h.engine.db, {})).toHaveLength(1);
    expect(getRootBudget(h.engine.db, root.id)).toBeNull();
  });
});
