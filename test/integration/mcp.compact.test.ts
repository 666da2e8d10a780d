import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { MCP_ANSWER_BYTES } from '../../main/commands/answer-budget.js';
import { SUMMARY_ERROR_CHARS } from '../../main/tasks/summary.js';
import { inMemory, realisticTask, type McpHarness, type ToolResult } from './mcp.helpers.js';

// Compact agent answers, so they fit in a model's context: a tools/list and list_tasks/wait_tasks results that fit a
// client's context, with nothing cut by the client.

let h: McpHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
/** An answer as it travels: the JSON-RPC response around the tool result (structuredContent and its text copy). */
const wire = (r: ToolResult) => bytes({ jsonrpc: '2.0', id: 1000, result: r });
/** The wire size of each page allPages returned. */
const wireOf = new WeakMap<object, number>();
const SUMMARY_KEYS = ['id', 'name', 'status', 'kind', 'worker', 'updatedAt', 'error', 'waitingOn'];

/** A realistic task as an agent delegates it: a paragraph of instructions, criteria and verify commands. */

/** Delegate `n` tasks in batches of 100 (the batch maximum); ids newest last. */
async function delegateMany(harness: McpHarness, n: number, make: (i: number) => Record<string, unknown>): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 100) {
    const tasks = Array.from({ length: Math.min(100, n - start) }, (_, k) => make(start + k));
    const r = await harness.call('delegate_batch', { tasks });
    expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
    ids.push(...r.structuredContent.tasks.map((t: { id: string }) => t.id));
  }
  return ids;
}

/** The structured result, after checking the text block carries the same JSON, uncut. */
function whole(r: ToolResult): any {
  expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
  expect(JSON.parse(r.content[0].text)).toEqual(r.structuredContent);
  return r.structuredContent;
}

/** Every page of list_tasks from `args`, following cursor until has_more is false. */
async function allPages(harness: McpHarness, args: Record<string, unknown>): Promise<any[]> {
  const pages: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await harness.call('list_tasks', { ...args, ...(cursor ? { cursor } : {}) });
    const page = whole(r);
    wireOf.set(page, wire(r));
    pages.push(page);
    if (!page.has_more) {
      expect(page.cursor).toBeNull();
      return pages;
    }
    expect(page.cursor).toBe(page.tasks.at(-1).id);
    cursor = page.cursor;
    expect(pages.length).toBeLessThan(200);
  }
}

describe('compact MCP answers', () => {
  it('tools/list fits in 7,000 bytes with a type on every field, and keeps object schemas, annotations and descriptions', async () => {
    h = await inMemory();
    const listed = await h.client.listTools();
    // The person's tools (approve, accept, open a pull request) are listed only where the person allowed MCP to use them.
    expect(listed.tools.length).toBe(17);
    expect(listed.tools.map((t) => t.name)).not.toContain('accept_task');
    expect(bytes(listed)).toBeLessThanOrEqual(7_000);
    // Every field, item and alternative says its type: a client that meets one without (Codex) drops its
    // description too, and the model sees `workspace: {}`.
    const untyped: string[] = [];
    const visit = (node: any, path: string) => {
      for (const [k, v] of Object.entries<any>(node.properties ?? {})) {
        if (!v.type) untyped.push(`${path}.${k}`);
        visit(v, `${path}.${k}`);
      }
      if (node.items) {
        if (!node.items.type && !node.items.anyOf) untyped.push(`${path}[]`);
        visit(node.items, `${path}[]`);
      }
      (node.anyOf ?? []).forEach((alt: any, i: number) => {
        if (!alt.type) untyped.push(`${path}|${i}`);
        visit(alt, `${path}|${i}`);
      });
    };
    for (const t of listed.tools) visit(t.inputSchema, t.name);
    expect(untyped).toEqual([]);
    for (const t of listed.tools) {
      expect(t.inputSchema.type, t.name).toBe('object');
      expect(t.description!.length, t.name).toBeGreaterThan(10);
      const cmd = COMMANDS.get(t.name)!;
      expect(t.annotations?.readOnlyHint, t.name).toBe(cmd.readOnly);
      if (!cmd.readOnly) expect(t.annotations?.destructiveHint, t.name).toBe(Boolean(cmd.destructive));
    }
    const delegate = listed.tools.find((t) => t.name === 'delegate_task')!;
    expect(delegate.inputSchema.required).toEqual(['objective', 'workspace']);
    expect(Object.keys(delegate.inputSchema.properties!)).toEqual(expect.arrayContaining(['objective', 'workspace', 'kind', 'worker', 'mode', 'depends_on', 'verify']));
    // delegate_batch names delegate_task's input instead of repeating it; calls are still checked in full.
    const batchItems = (listed.tools.find((t) => t.name === 'delegate_batch')!.inputSchema.properties as any).tasks.items;
    expect(batchItems).toEqual({ type: 'object', description: 'delegate_task input + ref: its name for depends_on' });
    expect(Object.keys(delegate.inputSchema.properties!)).not.toContain('ref'); // only meaningful in a batch
    const ok = await h.call('delegate_batch', { tasks: [{ ref: 'a', objective: 'x', workspace: h.repo }, { objective: 'y', workspace: h.repo, depends_on: ['a'] }] });
    expect(ok.isError).toBeFalsy();
    // The hints a model needs stay, given once: on delegate_task, and orchestrate_goal points to them.
    const props = delegate.inputSchema.properties as Record<string, { type?: string; description?: string; enum?: string[] }>;
    expect(props.kind.description).toMatch(/only execute writes/);
    expect(props.kind.enum).toEqual(['plan', 'explore', 'review', 'execute']);
    expect(props.mode.description).toMatch(/auto_readonly \(default\)/);
    expect(props.workspace).toEqual({ type: 'string', description: expect.stringMatching(/absolute path/) });
    expect(props.objective).toEqual({ type: 'string', description: 'self-contained instructions' });
    expect(props.kind.type).toBe('string');
    expect(listed.tools.find((t) => t.name === 'orchestrate_goal')!.description).toMatch(/fields as in delegate_task/);
    // budget: listed once, on delegate_task, as one line naming its fields (per task and the tree's totals).
    expect(props.budget).toEqual({ type: 'object', description: expect.stringMatching(/max_tokens.*max_cost_usd.*max_turns.*max_wall_s.*root_max_\*/) });
    expect(Object.keys(listed.tools.find((t) => t.name === 'orchestrate_goal')!.inputSchema.properties!)).not.toContain('budget');
    const limited = await h.call('delegate_task', { objective: 'x', workspace: h.repo, budget: { max_tokens: 5000, root_max_tokens: 9000 } });
    expect(limited.isError).toBeFalsy();
    const wrongBudget = await h.call('delegate_task', { objective: 'x', workspace: h.repo, budget: { max_tokenz: 5 } });
    expect(wrongBudget.structuredContent.message).toMatch(/budget\.max_tokenz|max_tokenz/);
    const bad = await h.call('delegate_batch', { tasks: [{ objective: 'x', workspace: h.repo, bogus: 1 }] });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent.message).toMatch(/tasks\[0\]\.bogus/);
    // Unlisted, still callable: a model that calls a person's tool anyway is told why it is refused.
    const made = await h.call('delegate_task', { objective: 'x', workspace: h.repo, worker: 'mock' });
    const accept = await h.call('accept_task', { id: made.structuredContent.task.id });
    expect(accept.isError).toBe(true);
    expect(accept.structuredContent.message).toMatch(/allow_mcp/);
  });

  it("with approvals.allow_mcp the person's tools are listed too", async () => {
    const allowed = await inMemory({ configToml: '[approvals]\nallow_mcp = true\n' });
    try {
      const names = (await allowed.client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['approve_task', 'accept_task', 'open_pull_request']));
      expect(names).toHaveLength(20);
    } finally {
      await allowed.close();
    }
  });

  it('list_tasks of 100 realistic tasks: summaries in pages of at most 30 KB on the wire, full records only with detail', async () => {
    h = await inMemory();
    const ids = await delegateMany(h, 100, (i) => realisticTask(h!.repo, i));

    // The whole answer (summaries and their text copy) fits the budget: the page ends early, the cursor goes on.
    const summaryPages = await allPages(h, {});
    const summaries = summaryPages.flatMap((p) => p.tasks);
    expect(summaries.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect(summaryPages[0].tasks.length).toBeGreaterThanOrEqual(50);
    for (const p of summaryPages) expect(wireOf.get(p)).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    for (const t of summaries) {
      expect(SUMMARY_KEYS).toEqual(expect.arrayContaining(Object.keys(t)));
      expect(t).toMatchObject({ status: 'queued', kind: 'explore', worker: expect.any(String), updatedAt: expect.any(Number) });
    }

    // detail: the full records, paged within the same budget so a client never cuts them.
    const detailPages = await allPages(h, { detail: true });
    expect(detailPages.length).toBeGreaterThan(1);
    const records = detailPages.flatMap((p) => p.tasks);
    expect(records.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect(records[0].objective).toMatch(/dead exports|exported function/);
    expect(records[0].metadata).toMatchObject({ area: 'maintenance' });
    for (const p of detailPages) expect(wireOf.get(p)).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    // What the default call saved, for the record.
    expect(bytes(summaries) * 3).toBeLessThan(records.reduce((n: number, r: unknown) => n + bytes(r), 0));
  });

  it('pages by limit and cursor through all tasks; long names and errors stay short and within the budget', async () => {
    h = await inMemory({ configToml: '[limits]\nmcp_mutations_per_minute = 10000\n' });
    const ids = await delegateMany(h, 100, (i) => ({ ...realisticTask(h!.repo, i), name: `${i} `.padEnd(200, 'n') }));
    const reason = 'the plan changed: '.padEnd(500, 'r');
    for (const id of ids) whole(await h.call('cancel_task', { id, reason }));

    const byLimit = await allPages(h, { limit: 20 });
    expect(byLimit.map((p) => p.tasks.length)).toEqual([20, 20, 20, 20, 20]);
    expect(byLimit.flatMap((p) => p.tasks.map((t: { id: string }) => t.id))).toEqual([...ids].reverse());

    // 100 summaries of 200-character names and 500-character errors exceed the page budget: the page
    // ends early with has_more, and the next pages carry the rest.
    const byBudget = await allPages(h, { status: ['cancelled'] });
    expect(byBudget.length).toBeGreaterThan(1);
    expect(byBudget[0].tasks.length).toBeLessThan(100);
    for (const p of byBudget) expect(wireOf.get(p)).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    const all = byBudget.flatMap((p) => p.tasks);
    expect(all.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect(all[0].error.code).toBe('cancelled');
    expect(all[0].error.message.length).toBe(SUMMARY_ERROR_CHARS);
    expect(all[0].error.message.endsWith('…')).toBe(true);
    // get_task keeps the whole message.
    const full = whole(await h.call('get_task', { id: ids[0] }));
    expect(full.task.error.message).toContain(reason);
  });

  it('summaries say what a queued task waits on', async () => {
    h = await inMemory();
    const b = whole(await h.call('delegate_batch', { tasks: [
      { ref: 'gate', objective: 'change it', workspace: h.repo, kind: 'execute' },
      { ref: 'after', objective: 'look at it', workspace: h.repo, depends_on: ['gate'] },
    ] }));
    const [gate, after] = b.tasks;
    const listed = whole(await h.call('list_tasks'));
    expect(listed.tasks.find((t: { id: string }) => t.id === after.id).waitingOn).toEqual([gate.id]);
    const waited = whole(await h.call('wait_tasks', { ids: [after.id], timeout_s: 5 }));
    expect(waited.reason).toBe('needs_approval');
    expect(waited.tasks).toEqual([{ id: after.id, name: after.name, status: 'queued', kind: 'explore', worker: after.worker, updatedAt: after.updatedAt, waitingOn: [gate.id] }]);
  });

  it('wait_tasks takes 500 ids and answers within the budget with counts; 501 are refused naming ids', async () => {
    h = await inMemory({ configToml: '[limits]\nmcp_mutations_per_minute = 10000\n' });
    const ids = await delegateMany(h, 500, (i) => ({ objective: `look at file ${i}`, workspace: h!.repo }));
    for (const id of ids.slice(0, 3)) whole(await h.call('cancel_task', { id }));
    const waitedRaw = await h.call('wait_tasks', { ids, timeout_s: 0 });
    const waited = whole(waitedRaw);
    expect(waited.reason).toBe('timeout');
    expect(waited.counts).toEqual({ cancelled: 3, queued: 497 });
    expect(wire(waitedRaw)).toBeLessThanOrEqual(MCP_ANSWER_BYTES);
    // 500 summaries do not fit: the answer keeps the first that do and says how many it left out.
    expect(waited.omitted).toBeGreaterThan(0);
    expect(waited.tasks.length + waited.omitted).toBe(500);
    expect(waited.tasks.map((t: { id: string }) => t.id)).toEqual(ids.slice(0, waited.tasks.length));
    expect(waited.tasks[0]).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    for (const t of waited.tasks) expect(SUMMARY_KEYS).toEqual(expect.arrayContaining(Object.keys(t)));

    // A few ids: every summary, nothing omitted.
    const few = whole(await h.call('wait_tasks', { ids: ids.slice(0, 3), timeout_s: 5 }));
    expect(few).toMatchObject({ reason: 'settled', counts: { cancelled: 3 } });
    expect(few.tasks).toHaveLength(3);
    expect(few.omitted).toBeUndefined();

    const refused = await h.call('wait_tasks', { ids: [...ids, ids[0]], timeout_s: 0 });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent.code).toBe('invalid_input');
    expect(refused.structuredContent.message).toMatch(/^wait_tasks: ids: .*500/);
  });
});
