import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';

/** Collect an SSE response into its parsed data frames. */
async function sse(res: Response): Promise<Record<string, any>[]> {
  const text = await res.text();
  return text.split('\n\n').map((f) => f.split('\n').find((l) => l.startsWith('data: '))?.slice(6)).filter((d): d is string => !!d && d !== '[DONE]').map((d) => JSON.parse(d));
}

describe('scripted gateway', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({
      script: { turns: [{ text: 'default turn 0' }, { text: 'default turn 1' }] },
      scripts: {
        tools: { turns: [{ text: 'Calling.', tools: [{ shell: 'ls' }, { write: { path: 'a.txt', content: 'x\ny\n' } }] }, { json: { ok: true } }] },
        flaky: { turns: [{ error: { status: 500, times: 1 }, text: 'after one 500' }] },
      },
    });
  });
  afterAll(() => gw.close());
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const tools = [{ type: 'function', name: 'exec_command' }];

  it('picks the turn from the history length and the script from the prompt marker', async () => {
    const r0 = await sse(await post('/v1/responses', { model: 'm', input: [{ role: 'user', content: 'hi' }], tools }));
    expect(r0.at(-1)!.response.output[0].content[0].text).toBe('default turn 0');
    const r1 = await sse(await post('/v1/responses', { model: 'm', input: [{ role: 'user', content: 'hi' }, { type: 'message', role: 'assistant', content: [] }, { type: 'function_call' }, { type: 'function_call_output' }, { role: 'user', content: 'more' }], tools }));
    expect(r1.at(-1)!.response.output[0].content[0].text).toBe('default turn 1');
    const m = await sse(await post('/v1/messages', { model: 'c', system: [{ type: 'text', text: 'Primary working directory: /w/repo' }], messages: [{ role: 'user', content: 'go [[script:tools]]' }], tools: [{ name: 'Bash' }] }));
    const toolUses = m.filter((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use').map((e) => e.content_block.name);
    expect(toolUses).toEqual(['Bash', 'Write']);
    const partial = m.filter((e) => e.delta?.type === 'input_json_delta' && e.index === 2).map((e) => e.delta.partial_json).join('');
    expect(JSON.parse(partial)).toEqual({ file_path: '/w/repo/a.txt', content: 'x\ny\n' });
  });

  it('renders file writes as apply_patch for Codex and answers side requests with text only', async () => {
    const r = await sse(await post('/v1/responses', { model: 'm', input: [{ role: 'user', content: '[[script:tools]]' }], tools }));
    const items = r.at(-1)!.response.output;
    expect(items.map((i: { type: string }) => i.type)).toEqual(['message', 'function_call', 'custom_tool_call']);
    expect(items[2].input).toBe('*** Begin Patch\n*** Add File: a.txt\n+x\n+y\n*** End Patch\n');
    const side = await sse(await post('/v1/chat/completions', { model: 'f', messages: [{ role: 'user', content: 'title for [[script:tools]]' }] }));
    expect(side.some((c) => c.choices?.[0]?.delta?.tool_calls)).toBe(false);
    expect(side.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')).toBe('Scripted title');
  });

  it('fails a turn `times` times, then plays it; logs requests without key material', async () => {
    const body = { model: 'f', messages: [{ role: 'user', content: '[[script:flaky]]' }], tools: [{ type: 'function', function: { name: 'bash' } }] };
    const first = await post('/v1/chat/completions', body, { authorization: 'Bearer sk-secret-123' });
    expect(first.status).toBe(500);
    expect(first.headers.get('retry-after-ms')).toBe('50');
    const second = await sse(await post('/v1/chat/completions', body));
    expect(second.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')).toBe('after one 500');
    const logged = gw.requests.filter((r) => r.summary?.script === 'flaky');
    expect(logged.map((r) => r.outcome)).toEqual(['error 500', 'text']);
    expect(logged[0].headers.authorization).toBe('<redacted 20 chars>');
    expect(JSON.stringify(gw.requests)).not.toContain('sk-secret-123');
  });

  it('simulates a prefix cache in 64-token blocks and reports it in each API usage', async () => {
    gw.resetCache();
    const big = 'x'.repeat(4000);
    const msgs = [{ role: 'user', content: big }];
    const a = await sse(await post('/v1/chat/completions', { model: 'f', messages: msgs, tools: [{ type: 'function', function: { name: 'bash' } }] }));
    const usageA = a.find((c) => c.usage)!.usage;
    expect(usageA.prompt_tokens_details.cached_tokens).toBe(0);
    const b = await sse(await post('/v1/chat/completions', { model: 'f', messages: [...msgs, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'again' }], tools: [{ type: 'function', function: { name: 'bash' } }] }));
    const usageB = b.find((c) => c.usage)!.usage;
    expect(usageB.prompt_tokens).toBeGreaterThan(usageA.prompt_tokens);
    expect(usageB.prompt_tokens_details.cached_tokens % 64).toBe(0);
    expect(usageB.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(usageA.prompt_tokens - 64);
    // Anthropic shape: nothing uncached outside the cache fields.
    const m = await sse(await post('/v1/messages', { model: 'c', system: big, messages: [{ role: 'user', content: 'q' }], tools: [{ name: 'Bash' }] }));
    const m2 = await sse(await post('/v1/messages', { model: 'c', system: big, messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'r' }], tools: [{ name: 'Bash' }] }));
    const start = m2.find((e) => e.type === 'message_start')!.message.usage;
    expect(start.input_tokens).toBe(0);
    expect(start.cache_read_input_tokens).toBeGreaterThan(900);
    expect(m.find((e) => e.type === 'message_delta')!.usage.cache_read_input_tokens).toBe(0);
  });

  it('answers unknown routes (HEAD /, npm lookups) with 404 and logs them', async () => {
    const res = await fetch(`${gw.url}/`, { method: 'HEAD' });
    expect(res.status).toBe(404);
    expect(gw.requests.at(-1)).toMatchObject({ method: 'HEAD', path: '/', outcome: 'not found' });
  });
});
