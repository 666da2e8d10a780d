import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';

/** The output items of a Responses SSE stream (from response.completed). */
async function output(res: Response): Promise<Record<string, any>[]> {
  const frames = (await res.text()).split('\n\n').map((f) => f.split('\n').find((l) => l.startsWith('data: '))?.slice(6)).filter((d): d is string => !!d);
  return JSON.parse(frames.at(-1)!).response.output;
}

/** Server `lw`'s tools as Codex shows them: a namespace (also the shape of a tool_search_output's tools). */
const namespace = (...names: string[]) => ({ type: 'namespace', name: 'mcp__lw', description: 'LW', tools: names.map((name) => ({ type: 'function', name, parameters: { type: 'object' } })) });
const BUILTIN = { type: 'function', name: 'exec_command' };
const SEARCH = { type: 'tool_search', execution: 'client' };
const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] };

describe('scripted gateway: {mcp:{server, tool, input}} turns', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({
      script: {
        turns: [
          { text: 'Listing.', tools: [{ mcp: { server: 'lw', tool: 'list_tasks', input: { limit: 5 } } }] },
          { tools: [{ mcp: { server: 'lw', tool: 'nope', input: {} } }] },
        ],
      },
    });
  });
  afterAll(() => gw.close());
  const post = (path: string, body: unknown) => fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('searches a deferred tool first (not a turn), then calls it with its namespace', async () => {
    const first = await output(await post('/v1/responses', { model: 'gpt-5.5', input: [user], tools: [BUILTIN, SEARCH] }));
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ type: 'tool_search_call', execution: 'client', arguments: { query: 'list_tasks', limit: 20 } });
    expect(first[0].call_id).toMatch(/^fgw_autosearch_/);
    expect(gw.requests.at(-1)!.outcome).toBe('tool search');

    const found = { type: 'tool_search_output', call_id: first[0].call_id, execution: 'client', status: 'completed', tools: [namespace('list_tasks')] };
    const second = await output(await post('/v1/responses', { model: 'gpt-5.5', input: [user, first[0], found], tools: [BUILTIN, SEARCH] }));
    expect(gw.requests.at(-1)!.summary!.turnIndex).toBe(0);
    expect(second.map((i) => i.type)).toEqual(['message', 'function_call']);
    expect(second[1]).toMatchObject({ namespace: 'mcp__lw', name: 'list_tasks', arguments: '{"limit":5}' });

    // The next turn's tool is not found by its search: text, not another search.
    const done = { type: 'function_call_output', call_id: second[1].call_id, output: '{"tasks":[]}' };
    const history = [user, first[0], found, ...second, done];
    const search2 = await output(await post('/v1/responses', { model: 'gpt-5.5', input: history, tools: [BUILTIN, SEARCH] }));
    expect(search2[0]).toMatchObject({ type: 'tool_search_call', arguments: { query: 'nope' } });
    const empty = { type: 'tool_search_output', call_id: search2[0].call_id, execution: 'client', status: 'completed', tools: [] };
    const last = await output(await post('/v1/responses', { model: 'gpt-5.5', input: [...history, search2[0], empty], tools: [BUILTIN, SEARCH] }));
    expect(gw.requests.at(-1)!.summary!.turnIndex).toBe(1);
    expect(last).toHaveLength(1);
    expect(last[0].content[0].text).toMatch(/^fakegw: MCP tool mcp__lw__nope not offered/);
  });

  it('calls a tool offered in a namespace directly, and answers text for a tool never offered', async () => {
    const direct = await output(await post('/v1/responses', { model: 'fake-model', input: [user], tools: [BUILTIN, namespace('get_task', 'list_tasks')] }));
    expect(direct[1]).toMatchObject({ type: 'function_call', namespace: 'mcp__lw', name: 'list_tasks' });
    const absent = await output(await post('/v1/responses', { model: 'fake-model', input: [user], tools: [BUILTIN] }));
    expect(absent.map((i) => i.type)).toEqual(['message']);
    expect(absent[0].content[0].text).toContain('mcp__lw__list_tasks not offered');
  });

  it('names the tool mcp__<server>__<tool> for Claude Code and <server>_<tool> for OpenCode', async () => {
    const m = await (await post('/v1/messages', { model: 'c', messages: [{ role: 'user', content: 'go' }], tools: [{ name: 'Bash' }] })).text();
    expect(m).toContain('"name":"mcp__lw__list_tasks"');
    const c = await (await post('/v1/chat/completions', { model: 'o', messages: [{ role: 'user', content: 'go' }], tools: [{ type: 'function', function: { name: 'bash' } }] })).text();
    expect(c).toContain('"name":"lw_list_tasks"');
  });
});
