import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { COMMANDS } from '../../main/commands/index.js';
import { defineCommand, type CommandDef } from '../../main/commands/table.js';
import { AppError } from '../../main/core/errors.js';
import { CORE_TOOLS, MCP_TOOLS, PERSON_TOOLS } from '../../main/mcp/tools.js';
import { inMemory, type McpHarness } from './mcp.helpers.js';

let h: McpHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const expectError = (r: { isError?: boolean; structuredContent?: any }, code: string) => {
  expect(r.isError).toBe(true);
  expect(r.structuredContent.code).toBe(code);
  expect(typeof r.structuredContent.message).toBe('string');
};

describe('MCP server over the in-memory transport', () => {
  it('lists the SPEC tool set that exists, with object schemas, safe names and annotations', async () => {
    h = await inMemory();
    const { tools } = await h.client.listTools();
    const names = tools.map((t) => t.name);
    // The person's tools are listed only with approvals.allow_mcp (mcp.compact.test.ts shows them there).
    const expected = MCP_TOOLS.filter((n) => (COMMANDS.has(n) || n === 'get_cache_metrics') && !(PERSON_TOOLS as readonly string[]).includes(n));
    expect(names).toEqual(expected);
    for (const t of tools) {
      expect(t.name).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(t.inputSchema.type).toBe('object');
      expect(t.description!.length).toBeLessThan(200);
      const cmd = COMMANDS.get(t.name);
      if (cmd) {
        expect(t.annotations?.readOnlyHint).toBe(cmd.readOnly);
        // destructiveHint means nothing on a read-only tool (MCP spec), so only writers carry it.
        expect(t.annotations?.destructiveHint).toBe(cmd.readOnly ? undefined : Boolean(cmd.destructive));
      }
    }
    expect(tools.find((t) => t.name === 'get_task')!.annotations!.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === 'delegate_task')!.annotations!.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === 'cancel_task')!.annotations!.destructiveHint).toBe(true);
    // Lean: the whole list stays under ~5k tokens (bytes / 4).
    expect(JSON.stringify({ tools }).length / 4).toBeLessThan(5000);
    const init = h.client.getInstructions();
    expect(init).toMatch(/delegate_task/);
    expect(h.client.getServerVersion()?.name).toBe('lightworker');
  });

  it('core tool set exposes only delegate/get/wait/list/cancel', async () => {
    h = await inMemory({ server: { toolSet: 'core' } });
    const { tools } = await h.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(CORE_TOOLS.filter((n) => COMMANDS.has(n)).sort());
    // A tool outside the set is unknown here.
    await expect(h.call('approve_task', { id: '01J0000000000000000000000A' })).rejects.toThrow(/Unknown tool/);
  });

  it('delegates, reads, trees, lists, pages events, cancels and retries; structured and text output agree', async () => {
    h = await inMemory();
    const d = await h.call('delegate_task', { objective: 'look around', workspace: h.repo, kind: 'explore' });
    expect(d.isError).toBeFalsy();
    const id = d.structuredContent.task.id;
    expect(d.structuredContent.task.status).toBe('queued');
    expect(JSON.parse(d.content[0].text)).toEqual(d.structuredContent);

    const g = await h.call('get_task', { id });
    expect(g.structuredContent.task.objective).toBe('look around');

    const b = await h.call('delegate_batch', {
      tasks: [
        { ref: 'a', objective: 'first', workspace: h.repo },
        { ref: 'b', objective: 'second', workspace: h.repo, depends_on: ['a'] },
      ],
    });
    expect(b.structuredContent.tasks).toHaveLength(2);
    const [a, bb] = b.structuredContent.tasks;
    expect(bb.dependsOn).toEqual([a.id]);

    const tree = await h.call('get_task_tree', { id: bb.id });
    expect(tree.structuredContent.count).toBe(2);

    const list = await h.call('list_tasks', { limit: 10 });
    expect(list.structuredContent.tasks.map((t: any) => t.id)).toContain(id);

    const ev = await h.call('get_events', { cursor: 0, limit: 2 });
    expect(ev.structuredContent.events).toHaveLength(2);
    const ev2 = await h.call('get_events', { cursor: ev.structuredContent.cursor });
    expect(ev2.structuredContent.events[0].seq).toBeGreaterThan(ev.structuredContent.cursor);

    const c = await h.call('cancel_task', { id, reason: 'not needed' });
    expect(c.structuredContent.task.status).toBe('cancelled');
    const r = await h.call('retry_task', { id });
    expect(r.structuredContent.task.status).toBe('queued');
    expect(r.structuredContent.task.attempt).toBe(2);

    const doc = await h.call('run_doctor');
    expect(Array.isArray(doc.structuredContent.checks)).toBe(true);
  });

  it('orchestrate_goal queues a planner task; delegate_reviewed and compare_workers stay off the MCP list', async () => {
    h = await inMemory();
    const o = await h.call('orchestrate_goal', { goal: 'add a CHANGELOG', workspace: h.repo });
    expect(o.structuredContent.task.kind).toBe('plan');
    expect(o.structuredContent.task.profile).toBe('planner');
    expect(o.structuredContent.task.status).toBe('queued');
    await expect(h.call('compare_workers', {})).rejects.toThrow(/Unknown tool/);
  });

  it('every tool answers bad input with an isError result carrying a code, and keeps serving', async () => {
    h = await inMemory();
    const { tools } = await h.client.listTools();
    for (const t of tools) {
      const r = await h.call(t.name, { definitely_not_a_field: 1 });
      expect(r.isError, t.name).toBe(true);
      expect(['invalid_input', 'unavailable']).toContain(r.structuredContent.code);
    }
    expectError(await h.call('get_task', { id: 'nope' }), 'invalid_input');
    expectError(await h.call('get_task', { id: '01J0000000000000000000000A' }), 'not_found');
    expectError(await h.call('delegate_task', { objective: 'x', workspace: 'relative/path' }), 'invalid_input');
    expectError(await h.call('delegate_task', { objective: 'x'.repeat(70 * 1024), workspace: h.repo }), 'invalid_input');
    expectError(await h.call('list_tasks', { limit: 'ten' }), 'invalid_input');
    expectError(await h.call('delegate_batch', { tasks: [{ ref: 'a', objective: 'x', workspace: h.repo, depends_on: ['a'] }] }), 'invalid_input');
    expectError(await h.call('retry_task', { id: (await h.call('delegate_task', { objective: 'y', workspace: h.repo })).structuredContent.task.id }), 'illegal_transition');
    if (!COMMANDS.has('get_cache_metrics')) expectError(await h.call('get_cache_metrics'), 'unavailable');
    await expect(h.call('no_such_tool')).rejects.toThrow(/Unknown tool/);
    expect((await h.call('list_tasks')).isError).toBeFalsy();
  });

  it('refuses approve_task over MCP by default, naming the setting', async () => {
    h = await inMemory();
    const t = (await h.call('delegate_task', { objective: 'write it', workspace: h.repo, kind: 'execute' })).structuredContent.task;
    expect(t.status).toBe('awaiting_approval');
    const r = await h.call('approve_task', { id: t.id });
    expectError(r, 'forbidden');
    expect(r.structuredContent.message).toMatch(/approvals\.allow_mcp/);
    expect(h.engine.db.prepare('SELECT status FROM tasks WHERE id = ?').get(t.id)).toEqual({ status: 'awaiting_approval' });
  });

  it('allows approve_task over MCP with approvals.allow_mcp = true in config.toml', async () => {
    h = await inMemory({ configToml: '[approvals]\nallow_mcp = true\n' });
    const t = (await h.call('delegate_task', { objective: 'write it', workspace: h.repo, kind: 'execute' })).structuredContent.task;
    const r = await h.call('approve_task', { id: t.id });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent.task.status).toBe('queued');
  });

  it('rate-limits mutating tools per minute (config) but never reads', async () => {
    h = await inMemory({ configToml: '[limits]\nmcp_mutations_per_minute = 3\n' });
    for (let i = 0; i < 3; i++) expect((await h.call('delegate_task', { objective: `t${i}`, workspace: h.repo })).isError).toBeFalsy();
    const r = await h.call('delegate_task', { objective: 'one too many', workspace: h.repo });
    expectError(r, 'rate_limited');
    expect(r.structuredContent.message).toMatch(/mcp_mutations_per_minute/);
    expect((await h.call('list_tasks')).structuredContent.tasks).toHaveLength(3);
  });

  it('applies the caller depth of the MCP process (LIGHTWORKER_DEPTH) to delegation', async () => {
    h = await inMemory({ server: { depth: 2 } });
    expectError(await h.call('delegate_task', { objective: 'nested', workspace: h.repo }), 'forbidden');
    expect((await h.call('list_tasks')).structuredContent.tasks).toHaveLength(0);
  });

  it('a long wait does not block other calls on the same connection; cancellation aborts the handler', async () => {
    let aborted = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slowWait = defineCommand({
      name: 'wait_tasks',
      description: 'test stand-in that blocks until released or cancelled',
      input: z.strictObject({ ids: z.array(z.string()) }),
      readOnly: true,
      async handler(ctx, input) {
        await new Promise<void>((resolve, reject) => {
          // ids ["forever"] waits until cancelled.
          if (!input.ids.includes('forever')) gate.then(resolve);
          ctx.signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new AppError('cancelled', 'wait cancelled'));
          });
        });
        return { done: true };
      },
    });
    const commands = new Map<string, CommandDef>([...COMMANDS, ['wait_tasks', slowWait as CommandDef]]);
    h = await inMemory({ commands });
    const waiting = h.call('wait_tasks', { ids: [] });
    let settled = false;
    void waiting.then(() => (settled = true));
    // Other calls go through while the wait is pending.
    const d = await h.call('delegate_task', { objective: 'meanwhile', workspace: h.repo });
    expect((await h.call('get_task', { id: d.structuredContent.task.id })).structuredContent.task.objective).toBe('meanwhile');
    expect(settled).toBe(false);
    release();
    expect((await waiting).structuredContent).toEqual({ done: true });

    // A client-side abort sends notifications/cancelled; the handler sees its signal aborted.
    const ac = new AbortController();
    const gated = h.client.callTool({ name: 'wait_tasks', arguments: { ids: ['forever'] } }, undefined, { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 50));
    ac.abort('test');
    await expect(gated).rejects.toThrow();
    await expect.poll(() => aborted).toBe(true);
    expect((await h.call('list_tasks')).isError).toBeFalsy();
  });

  it.runIf(COMMANDS.has('wait_tasks'))('the real wait_tasks returns at once for a task that needs approval, and get_task answers meanwhile', async () => {
    h = await inMemory();
    const q = (await h.call('delegate_task', { objective: 'stays queued', workspace: h.repo })).structuredContent.task;
    const w = h.call('wait_tasks', { ids: [q.id], timeout_s: 2 });
    const g = await h.call('get_task', { id: q.id });
    expect(g.structuredContent.task.status).toBe('queued');
    const r = await w;
    expect(r.isError).toBeFalsy();
    const e = (await h.call('delegate_task', { objective: 'needs a person', workspace: h.repo, kind: 'execute' })).structuredContent.task;
    const r2 = await h.call('wait_tasks', { ids: [e.id], timeout_s: 30 });
    expect(r2.isError).toBeFalsy();
    expect(JSON.stringify(r2.structuredContent)).toContain('awaiting_approval');
  });

  it.runIf(['get_task_diff', 'accept_task', 'list_workers', 'prune_workspaces', 'wait_tasks'].every((n) => COMMANDS.has(n)))(
    'an execute task end to end over MCP: approve, wait, diff, accept (allowed by config), workers, prune',
    async () => {
      h = await inMemory({ configToml: '[approvals]\nallow_mcp = true\n' });
      const { startSchedulerService } = await import('../../main/app.js');
      const svc = await startSchedulerService(h.engine);
      try {
        const workers = await h.call('list_workers');
        expect(JSON.stringify(workers.structuredContent)).toContain('mock');
        const t = (await h.call('delegate_task', { objective: 'add notes', workspace: h.repo, kind: 'execute', verify: ['test -f NOTES.md'], metadata: { mock: { write_files: { 'NOTES.md': 'hello\n' } } } })).structuredContent.task;
        expect(t.status).toBe('awaiting_approval');
        expect((await h.call('approve_task', { id: t.id })).isError).toBeFalsy();
        const w = await h.call('wait_tasks', { ids: [t.id], timeout_s: 50 });
        expect(w.structuredContent.tasks[0].status).toBe('completed');
        const diff = await h.call('get_task_diff', { id: t.id });
        expect(diff.structuredContent.files).toContain('NOTES.md');
        const acc = await h.call('accept_task', { id: t.id });
        expect(acc.isError, JSON.stringify(acc.structuredContent)).toBeFalsy();
        expect(acc.structuredContent.task.status).toBe('accepted');
        const prune = await h.call('prune_workspaces', {});
        expect(prune.isError).toBeFalsy();
      } finally {
        await svc.stop();
      }
    },
    90_000,
  );

  it.runIf(COMMANDS.has('accept_task'))('refuses accept_task over MCP by default', async () => {
    h = await inMemory();
    const t = (await h.call('delegate_task', { objective: 'x', workspace: h.repo, kind: 'execute' })).structuredContent.task;
    expectError(await h.call('accept_task', { id: t.id }), 'forbidden');
  });
});
