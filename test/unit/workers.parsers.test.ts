import { afterAll, describe, expect, it } from 'vitest';
import type { NormalizedEvent, WorkerAdapter, WorkerTurn } from '../../main/workers/adapter.js';
import { claudeCodeAdapter } from '../../main/workers/claude-code.js';
import { codexAdapter } from '../../main/workers/codex.js';
import { DEAD_REGISTRY, opencodeAdapter } from '../../main/workers/opencode.js';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { minimalEnv } from '../../main/workers/env.js';
import { tempDir } from '../helpers/env.js';
import { fakeTask } from '../helpers/worker-cli.js';

// Lines as the real CLIs print them (shortened from ../shared/notes/samples).
const tmp = tempDir('lw-parse-');
const tmp2 = tempDir('lw-parse-');
afterAll(() => {
  tmp.cleanup();
  tmp2.cleanup();
});
const turn = (over: Partial<WorkerTurn> = {}): WorkerTurn => ({
  task: fakeTask('execute', 'x'), prompt: 'p', workdir: tmp.dir, sandbox: 'workspace-write', resultSchema: null, resumeSessionId: null,
  runDir: tmp.dir, model: 'm', reasoningEffort: 'medium', gateway: null, baseEnv: minimalEnv(), ...over,
});
function feed(adapter: WorkerAdapter, t: WorkerTurn, lines: unknown[]): NormalizedEvent[] {
  const p = adapter.createParser(t);
  return lines.flatMap((l) => p.line(JSON.stringify(l)));
}

describe('codex stream parser', () => {
  it('reports per-turn usage although Codex prints thread-cumulative usage after resume', async () => {
    const t = turn();
    const first = feed(codexAdapter, t, [
      { type: 'thread.started', thread_id: 'th-1' },
      { type: 'item.completed', item: { id: 'i0', type: 'agent_message', text: 'hi' } },
      { type: 'item.completed', item: { id: 'i1', type: 'command_execution', command: 'ls', aggregated_output: 'x\n', exit_code: 1, status: 'failed' } },
      { type: 'turn.completed', usage: { input_tokens: 28307, cached_input_tokens: 18688, output_tokens: 64 } },
    ]);
    expect(first[0]).toEqual({ type: 'worker.started', sessionId: 'th-1', model: 'm' });
    expect(first).toContainEqual({ type: 'worker.tool', name: 'shell', status: 'failed', input: 'ls', output: 'x\n' });
    const usage = first.at(-1)!;
    expect(usage).toMatchObject({ type: 'worker.usage', inputTokens: 28307, cachedTokens: 18688, outputTokens: 64, thread: { thread: 'th-1', input: 28307, cached: 18688, output: 64 } });
    // The resumed turn gets the totals the runner read back from that event.
    const threadUsage = usage.type === 'worker.usage' ? usage.thread : undefined;
    const second = feed(codexAdapter, turn({ resumeSessionId: 'th-1', threadUsage }), [
      { type: 'thread.started', thread_id: 'th-1' },
      { type: 'turn.completed', usage: { input_tokens: 37924, cached_input_tokens: 28224, output_tokens: 77 } },
    ]);
    expect(second.at(-1)).toMatchObject({ type: 'worker.usage', inputTokens: 9617, cachedTokens: 9536, outputTokens: 13, thread: { thread: 'th-1', input: 37924 } });
    // Nothing is written per turn any more; a session recorded before (totals in CODEX_HOME) still subtracts.
    expect(existsSync(join(tmp.dir, 'codex-home', 'lightworker-usage.json'))).toBe(false);
    mkdirSync(join(tmp2.dir, 'codex-home'), { recursive: true });
    writeFileSync(join(tmp2.dir, 'codex-home', 'lightworker-usage.json'), JSON.stringify({ 'th-old': { input: 100, cached: 50, output: 10 } }));
    const legacy = feed(codexAdapter, turn({ resumeSessionId: 'th-old', runDir: tmp2.dir }), [{ type: 'turn.completed', usage: { input_tokens: 150, cached_input_tokens: 90, output_tokens: 15 } }]);
    expect(legacy.at(-1)).toMatchObject({ type: 'worker.usage', inputTokens: 50, cachedTokens: 40, outputTokens: 5 });
  });

  it('turns a 429 failure into rate_limited', async () => {
    const t = turn({ runDir: tmp2.dir });
    const p = codexAdapter.createParser(t);
    p.line(JSON.stringify({ type: 'thread.started', thread_id: 'th-2' }));
    const ev = p.line(JSON.stringify({ type: 'turn.failed', error: { message: 'exceeded retry limit, last status: 429 Too Many Requests' } }));
    expect(ev[0]).toMatchObject({ type: 'worker.failed', rateLimited: true });
    const out = await p.finish(1, 'Reading additional input from stdin...\n');
    expect(out).toMatchObject({ ok: false, sessionId: 'th-2', error: { code: 'rate_limited' } });
  });
});

describe('claude-code stream parser', () => {
  it('maps init, content blocks, tool results and the per-invocation result usage', async () => {
    const p = claudeCodeAdapter.createParser(turn());
    const ev = [
      { type: 'system', subtype: 'init', session_id: 's-1', model: 'claude-sonnet-4-5' },
      { type: 'assistant', session_id: 's-1', message: { content: [{ type: 'tool_use', id: 'tu1', name: 'Bash', input: { command: 'ls' } }] } },
      { type: 'user', session_id: 's-1', message: { content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'a.txt', is_error: false }] } },
      { type: 'result', subtype: 'success', is_error: false, result: 'Done.', session_id: 's-1', total_cost_usd: 0.12,
        usage: { input_tokens: 0, cache_creation_input_tokens: 29092, cache_read_input_tokens: 57728, output_tokens: 79 }, modelUsage: { 'claude-sonnet-4-5': {} } },
    ].flatMap((l) => p.line(JSON.stringify(l)));
    expect(ev).toEqual([
      { type: 'worker.started', sessionId: 's-1', model: 'claude-sonnet-4-5' },
      { type: 'worker.tool', name: 'Bash', status: 'started', input: { command: 'ls' } },
      { type: 'worker.tool', name: 'Bash', status: 'completed', output: 'a.txt' },
      { type: 'worker.usage', inputTokens: 86820, cachedTokens: 57728, outputTokens: 79, model: 'claude-sonnet-4-5', costUsd: 0.12 },
      { type: 'worker.completed', text: 'Done.' },
    ]);
    expect(await p.finish(0, '')).toEqual({ ok: true, finalText: 'Done.', sessionId: 's-1' });
  });

  it('fails an is_error result, rate_limited for a 429', async () => {
    const p = claudeCodeAdapter.createParser(turn());
    p.line(JSON.stringify({ type: 'result', subtype: 'success', is_error: true, api_error_status: 429, result: 'API Error: 429 rate limited', session_id: 's-2', usage: {} }));
    expect(await p.finish(1, '')).toMatchObject({ ok: false, error: { code: 'rate_limited', message: 'API Error: 429 rate limited' } });
  });
});

describe('opencode stream parser', () => {
  it('counts cached tokens into input per step and keeps the last step text as the answer', async () => {
    const p = opencodeAdapter.createParser(turn());
    const ev = [
      { type: 'step_start', sessionID: 'ses_1', part: {} },
      { type: 'text', sessionID: 'ses_1', part: { text: 'Working.' } },
      { type: 'tool_use', sessionID: 'ses_1', part: { tool: 'write', state: { status: 'completed', input: { filePath: '/x' }, output: 'Wrote file successfully.' } } },
      { type: 'step_finish', sessionID: 'ses_1', part: { reason: 'tool-calls', cost: 0, tokens: { input: 141, output: 31, reasoning: 0, cache: { write: 0, read: 7616 } } } },
      { type: 'step_start', sessionID: 'ses_1', part: {} },
      { type: 'text', sessionID: 'ses_1', part: { text: 'Done.' } },
    ].flatMap((l) => p.line(JSON.stringify(l)));
    expect(ev[0]).toEqual({ type: 'worker.started', sessionId: 'ses_1', model: 'm' });
    expect(ev).toContainEqual({ type: 'worker.usage', inputTokens: 7757, cachedTokens: 7616, outputTokens: 31, model: 'm', costUsd: 0 });
    expect(await p.finish(0, '')).toEqual({ ok: true, finalText: 'Done.', sessionId: 'ses_1' });
  });

  it('maps an APIError 429 event to rate_limited', async () => {
    const p = opencodeAdapter.createParser(turn());
    p.line(JSON.stringify({ type: 'error', sessionID: 'ses_2', error: { name: 'APIError', data: { message: 'Too Many Requests', statusCode: 429 } } }));
    expect(await p.finish(1, '')).toMatchObject({ ok: false, sessionId: 'ses_2', error: { code: 'rate_limited' } });
  });
});

describe('argv and environment', () => {
  const gateway = { name: 'fake', baseUrl: 'http://127.0.0.1:9/v1', keyEnv: 'FAKE_KEY', key: 'k-123' };
  it('codex: isolated CODEX_HOME, traffic-stopping flags, sandbox, schema, resume', async () => {
    const spec = await codexAdapter.buildSpawn(turn({ gateway, sandbox: 'read-only', resultSchema: { type: 'object' }, resumeSessionId: 'th-9' }));
    expect(spec.env.CODEX_HOME.startsWith(tmp.dir)).toBe(true);
    expect(spec.env.FAKE_KEY).toBe('k-123');
    expect(spec.args).toEqual(expect.arrayContaining(['--disable', 'plugins', 'shell_snapshot', 'unbounded_connection_retries', 'analytics.enabled=false', '--sandbox', 'read-only', '--output-schema', '-o']));
    expect(spec.args.slice(-3)).toEqual(['resume', 'th-9', '-']);
    expect(spec.stdin).toBe('p');
    expect(spec.args.join(' ')).toContain('env_key="FAKE_KEY"');
    expect(spec.args.join(' ')).not.toContain('k-123');
  });
  it('codex: turns with the same result schema share one file in the shareDir, rewritten when it was altered', async () => {
    const shareDir = join(tmp2.dir, 'cache');
    const schema = { type: 'object', properties: { summary: { type: 'string' } } };
    const fileOf = (args: string[]) => args[args.indexOf('--output-schema') + 1];
    const a = fileOf((await codexAdapter.buildSpawn(turn({ resultSchema: schema, shareDir, runDir: join(tmp2.dir, 'a') }))).args);
    const b = fileOf((await codexAdapter.buildSpawn(turn({ resultSchema: schema, shareDir, runDir: join(tmp2.dir, 'b') }))).args);
    expect(a).toBe(b);
    expect(a.startsWith(shareDir)).toBe(true);
    expect(JSON.parse(readFileSync(a, 'utf8'))).toEqual(schema);
    writeFileSync(a, '{"type":"string"}');
    const c = fileOf((await codexAdapter.buildSpawn(turn({ resultSchema: schema, shareDir }))).args);
    expect(c).toBe(a);
    expect(JSON.parse(readFileSync(a, 'utf8'))).toEqual(schema);
    const other = fileOf((await codexAdapter.buildSpawn(turn({ resultSchema: { type: 'array' }, shareDir }))).args);
    expect(other).not.toBe(a);
    expect(readdirSync(shareDir).filter((f) => f.endsWith('.json')).sort()).toEqual([a, other].map((f) => f.slice(shareDir.length + 1)).sort());
  });

  it('codex: the shell gets one shared, empty, read-only HOME; a turn finding it not empty gets its own', async () => {
    const shareDir = join(tmp2.dir, 'share-home');
    const runDir = join(tmp2.dir, 'run-home');
    const first = await codexAdapter.buildSpawn(turn({ shareDir, runDir }));
    const shared = join(shareDir, 'empty-home');
    expect(first.env.HOME).toBe(shared);
    expect(statSync(shared).mode & 0o777).toBe(0o555);
    expect((await codexAdapter.buildSpawn(turn({ shareDir, runDir }))).env.HOME).toBe(shared);
    expect(existsSync(join(runDir, 'home'))).toBe(false);
    chmodSync(shared, 0o755);
    writeFileSync(join(shared, '.bashrc'), 'echo planted\n');
    const own = await codexAdapter.buildSpawn(turn({ shareDir, runDir }));
    expect(own.env.HOME).toBe(join(runDir, 'home'));
    expect(readdirSync(own.env.HOME)).toEqual([]);
  });
  it('claude-code: isolated HOME, permission mode by sandbox, base URL without /v1', async () => {
    const ro = await claudeCodeAdapter.buildSpawn(turn({ gateway, sandbox: 'read-only' }));
    expect(ro.args).toEqual(expect.arrayContaining(['--permission-mode', 'default', '--disallowedTools', 'Write', '--strict-mcp-config']));
    expect(ro.env).toMatchObject({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: 'k-123', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' });
    expect(ro.env.HOME.startsWith(tmp.dir)).toBe(true);
    const rw = await claudeCodeAdapter.buildSpawn(turn({ gateway, resumeSessionId: 's-1' }));
    expect(rw.args).toEqual(expect.arrayContaining(['--permission-mode', 'acceptEdits', '--resume', 's-1']));
    expect(rw.args).not.toContain('p');
    expect(rw.stdin).toBe('p');
  });
  it('opencode: config from the environment without the key, the key staged in its private auth.json, npm registry off the gateway', async () => {
    const spec = await opencodeAdapter.buildSpawn(turn({ gateway, sandbox: 'read-only', resumeSessionId: 'ses_1' }));
    const cfg = JSON.parse(spec.env.OPENCODE_CONFIG_CONTENT);
    expect(cfg.provider.lightworker.options).toEqual({ baseURL: 'http://127.0.0.1:9/v1' });
    expect(cfg.permission).toMatchObject({ edit: 'deny', bash: 'deny' });
    expect(spec.env.OPENCODE_CONFIG_CONTENT).not.toContain('k-123');
    expect(Object.values(spec.env)).not.toContain('k-123');
    const staged = JSON.parse(readFileSync(join(spec.env.XDG_DATA_HOME, 'opencode', 'auth.json'), 'utf8'));
    expect(staged.lightworker).toEqual({ type: 'api', key: 'k-123' });
    expect(spec.env).toMatchObject({ npm_config_registry: DEAD_REGISTRY, OPENCODE_DISABLE_AUTOUPDATE: '1' });
    expect(spec.args).toEqual(['run', '--format', 'json', '--session', 'ses_1']);
    expect(spec.stdin).toBe('p');
  });
});
