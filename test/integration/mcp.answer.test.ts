import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { inMemory, type McpHarness } from './mcp.helpers.js';

let h: McpHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

/** A task that asks `ask` on its first turn, run to waiting_input by `lightworker run --until-idle`. */
async function waiting(harness: McpHarness, ask: unknown): Promise<string> {
  const r = await harness.call('delegate_task', { objective: 'ask', workspace: harness.repo, kind: 'explore', metadata: { mock: { result: ask, followup: { result: { summary: 'ok', findings: [] } } } } });
  const id = (r.structuredContent as { task: { id: string } }).task.id;
  expect((await runCli(['run', '--until-idle'], { home: harness.home })).code).toBe(0);
  return id;
}

describe('answer_task over MCP', () => {
  it('is listed, answers a question, and says what a waiting task needs in get_task and wait_tasks', async () => {
    h = await inMemory();
    expect((await h.client.listTools()).tools.map((t) => t.name)).toContain('answer_task');
    const id = await waiting(h, { question: { text: 'Which file?', options: ['a', 'b'] } });
    const w = await h.call('wait_tasks', { ids: [id], timeout_s: 1 });
    expect(w.structuredContent).toMatchObject({ reason: 'needs_input', tasks: [{ id, needs: { kind: 'question', asks: 'Which file?', options: ['a', 'b'] } }] });
    const got = await h.call('get_task', { id });
    expect((got.structuredContent as { task: { needs: unknown } }).task.needs).toMatchObject({ kind: 'question' });
    const a = await h.call('answer_task', { id, text: 'a' });
    expect(a.isError, JSON.stringify(a.structuredContent)).toBeFalsy();
    expect(a.structuredContent).toMatchObject({ task: { status: 'queued', attempt: 2 }, request: { decision: 'answer', answer: 'a', answeredBy: 'an MCP client' } });
  });

  it('refuses a permission grant unless approvals.allow_mcp, as an isError result naming why', async () => {
    h = await inMemory();
    const id = await waiting(h, { permission_request: { command: 'curl example.com', scope: 'network', reason: 'docs' } });
    const r = await h.call('answer_task', { id, decision: 'allow' });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ code: 'forbidden', message: expect.stringContaining('approvals.allow_mcp') });
  });

  it('grants a permission over MCP when approvals.allow_mcp = true', async () => {
    h = await inMemory({ configToml: '[approvals]\nallow_mcp = true\n' });
    const id = await waiting(h, { permission_request: { command: 'curl example.com', scope: 'network', reason: 'docs' } });
    const r = await h.call('answer_task', { id, decision: 'allow', remember: true });
    expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ request: { decision: 'allow', remember: true } });
  });
});
