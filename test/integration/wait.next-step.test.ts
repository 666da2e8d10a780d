import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { inMemory, type McpHarness } from './mcp.helpers.js';

// A wait that ends on a person says who acts next and where, so a host that cannot approve asks its user
// instead of calling wait_tasks again in a loop.

let h: McpHarness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

async function delegate(harness: McpHarness, input: Record<string, unknown>): Promise<string> {
  const r = await harness.call('delegate_task', { workspace: harness.repo, ...input });
  expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
  return (r.structuredContent as { task: { id: string } }).task.id;
}

describe('wait answers that need a person name the next step', () => {
  it('needs_approval: who approves and where; over MCP refused unless allowed, said as such (MCP and CLI)', async () => {
    h = await inMemory();
    const exec = await delegate(h, { objective: 'write it', kind: 'execute' });
    const after = await delegate(h, { objective: 'then look', kind: 'explore', depends_on: [exec] });
    const w = (await h.call('wait_tasks', { ids: [after], timeout_s: 1 })).structuredContent;
    expect(w.reason).toBe('needs_approval');
    // The task waited on is named, not only the one asked about.
    expect(w.next).toContain(`lightworker approve ${exec}`);
    expect(w.next).toMatch(/approval inbox/);
    expect(w.next).toMatch(/approve_task over MCP is refused here \(approvals\.allow_mcp is off\): ask your user/);

    const cli = await runCli(['wait', exec, '--timeout', '5'], { home: h.home });
    expect(cli.stdout).toMatch(new RegExp(`^needs_approval\\nnext: a person approves ${exec} `));
    const json = JSON.parse((await runCli(['wait', exec, '--timeout', '5', '--json'], { home: h.home })).stdout);
    expect(json.next).toContain(`lightworker approve ${exec}`);
  });

  it('needs_approval with approvals.allow_mcp: approve_task is named as a way', async () => {
    h = await inMemory({ configToml: '[approvals]\nallow_mcp = true\n' });
    const exec = await delegate(h, { objective: 'write it', kind: 'execute', mode: 'plan_only' });
    const w = (await h.call('wait_tasks', { ids: [exec], timeout_s: 1 })).structuredContent;
    expect(w.reason).toBe('needs_approval');
    expect(w.next).toMatch(/approve_task may approve it over MCP/);
  });

  it('needs_input: answer_task for a question, the decision for a permission', async () => {
    h = await inMemory();
    const q = await delegate(h, { objective: 'ask', kind: 'explore', metadata: { mock: { result: { question: { text: 'Which file?' } }, followup: { result: { summary: 'ok', findings: [] } } } } });
    const p = await delegate(h, { objective: 'ask', kind: 'explore', metadata: { mock: { result: { permission_request: { command: 'curl example.com', scope: 'network', reason: 'docs' } }, followup: { result: { summary: 'ok', findings: [] } } } } });
    expect((await runCli(['run', '--until-idle'], { home: h.home })).code).toBe(0);
    const w = (await h.call('wait_tasks', { ids: [q, p], timeout_s: 1 })).structuredContent;
    expect(w.reason).toBe('needs_input');
    expect(w.next).toContain(`${q} asks a question: answer_task {id, text}`);
    expect(w.next).toContain(`${p} asks a permission: answer_task {id, decision: "allow"|"deny"} (allow only by a person here`);
    const cli = await runCli(['wait', q, '--timeout', '5'], { home: h.home });
    expect(cli.stdout).toMatch(/^needs_input\nnext: .* asks a question: answer_task/);
  });
});
