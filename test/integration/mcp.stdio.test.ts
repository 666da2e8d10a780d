import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import { makeRepo, tempDir } from '../helpers/env.js';
import { BIN, StdioChild } from './mcp.helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function setup(env: Record<string, string> = {}): { child: StdioChild; home: string; repo: string } {
  const { dir, cleanup } = tempDir('lw-mcp-stdio-');
  const home = join(dir, 'home');
  const repo = makeRepo(join(dir, 'repo'));
  const child = new StdioChild(home, env);
  cleanups.push(cleanup, () => child.stop());
  return { child, home, repo };
}

/** Small deterministic PRNG so a fuzz failure can be replayed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

describe('lightworker mcp over stdio (real child process)', () => {
  it('answers initialize and tools/list, then serves tool calls; stdout carries only JSON-RPC', async () => {
    const { child, repo } = setup();
    const init = await child.initialize();
    expect(init.result.serverInfo.name).toBe('lightworker');
    expect(init.result.instructions).toMatch(/delegate_task/);
    const list = await child.request('tools/list');
    expect(list.result.tools.length).toBeGreaterThanOrEqual(10);
    const d = await child.callTool('delegate_task', { objective: 'hello', workspace: repo, kind: 'explore' });
    expect(d.result.isError).toBeFalsy();
    const g = await child.callTool('get_task', { id: d.result.structuredContent.task.id });
    expect(g.result.structuredContent.task.name).toBe('hello');
    for (const line of child.stdoutLines) expect(JSON.parse(line).jsonrpc).toBe('2.0');
  });

  it('answers malformed JSON, batch arrays, unknown methods, invalid requests, oversize lines and wrong types with errors, and keeps serving', async () => {
    const { child } = setup();
    await child.initialize();
    child.send('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect((await child.waitFor((m) => m.error?.code === -32700)).id).toBeNull();
    child.send([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
    expect((await child.waitFor((m) => m.error?.code === -32600 && /batch/.test(m.error.message))).id).toBeNull();
    expect((await child.request('no/such/method')).error.code).toBe(-32601);
    child.send({ jsonrpc: '1.0', id: 'old', method: 'ping' });
    expect((await child.waitFor((m) => m.id === 'old')).error.code).toBe(-32600);
    child.send('42');
    child.send('"just a string"');
    child.send('x'.repeat(9 * 1024 * 1024)); // over the 8 MiB line limit
    await child.waitFor((m) => m.error?.code === -32600 && /larger than/.test(m.error.message));
    const wrong = await child.request('tools/call', { name: 'list_tasks', arguments: 'not an object' });
    expect(wrong.error.code).toBe(-32602);
    const wrongArgs = await child.callTool('list_tasks', { limit: 'many', status: 7 });
    expect(wrongArgs.result.isError).toBe(true);
    expect(wrongArgs.result.structuredContent.code).toBe('invalid_input');
    const unknownTool = await child.callTool('rm_rf', {});
    expect(unknownTool.error.code).toBe(-32602);
    expect((await child.request('ping')).result).toEqual({});
    expect(child.proc.exitCode).toBeNull();
  });

  it('survives a fuzz of a few thousand random messages and still answers at the end', async () => {
    const { child, repo } = setup();
    await child.initialize();
    const rnd = prng(20261129);
    const pick = <T,>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const methods = ['tools/call', 'tools/list', 'ping', 'initialize', 'resources/list', 'prompts/get', 'notifications/cancelled', 'notifications/initialized', 'logging/setLevel', '', 'x'.repeat(300)];
    const tools = ['get_task', 'list_tasks', 'delegate_task', 'get_events', 'cancel_task', 'wait_tasks', 'get_task_tree', 'approve_task', 'nope', '../etc', ''];
    const values = (): unknown => pick<() => unknown>([
      () => null, () => rnd() * 1e9, () => -1, () => 'x'.repeat(Math.floor(rnd() * 500)), () => true, () => [], () => ({}),
      () => [1, 'a', null], () => ({ nested: { deeper: [rnd()] } }), () => repo, () => '01J0000000000000000000000A', () => '\u0000\uffff',
    ])();
    const argsOf = () => Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, () => [pick(['id', 'ids', 'objective', 'workspace', 'limit', 'cursor', 'timeout_s', 'kind', 'x']), values()]));
    const N = 3000;
    for (let i = 0; i < N; i++) {
      const r = rnd();
      if (r < 0.15) child.send(Buffer.from(Array.from({ length: Math.floor(rnd() * 80) + 1 }, () => 32 + Math.floor(rnd() * 94))).toString('latin1'));
      else if (r < 0.25) child.send(JSON.stringify(values()));
      else if (r < 0.3) child.send(JSON.stringify([{ jsonrpc: '2.0', id: i, method: 'ping' }]));
      else {
        const method = pick(methods);
        const msg: Record<string, unknown> = { jsonrpc: rnd() < 0.95 ? '2.0' : '2', method };
        if (rnd() < 0.8) msg.id = rnd() < 0.5 ? `f${i}` : i;
        if (method === 'tools/call') msg.params = rnd() < 0.9 ? { name: pick(tools), arguments: rnd() < 0.9 ? argsOf() : values() } : values();
        else if (rnd() < 0.5) msg.params = values();
        if (method === 'tools/call' && (msg.params as any)?.name === 'wait_tasks' && (msg.params as any).arguments) (msg.params as any).arguments.timeout_s = 1;
        child.send(JSON.stringify(msg));
      }
    }
    const pong = await child.request('ping');
    expect(pong.result).toEqual({});
    const list = await child.request('tools/list');
    expect(list.result.tools.length).toBeGreaterThan(5);
    expect(child.proc.exitCode).toBeNull();
    expect(child.stderr).not.toMatch(/uncaught|unhandled rejection/i);
  }, 120_000);

  it('takes the caller depth and the core tool set from its own environment', async () => {
    const { child, repo } = setup({ LIGHTWORKER_DEPTH: '2', LIGHTWORKER_MCP_TOOLS: 'core' });
    await child.initialize();
    const list = await child.request('tools/list');
    expect(list.result.tools.map((t: any) => t.name).sort()).toEqual(['cancel_task', 'delegate_task', 'get_task', 'list_tasks', 'wait_tasks']);
    const d = await child.callTool('delegate_task', { objective: 'too deep', workspace: repo });
    expect(d.result.isError).toBe(true);
    expect(d.result.structuredContent.code).toBe('forbidden');
  });

  it.each([
    ['stdin EOF', (c: StdioChild) => c.proc.stdin.end()],
    ['SIGTERM', (c: StdioChild) => c.proc.kill('SIGTERM')],
    ['SIGINT', (c: StdioChild) => c.proc.kill('SIGINT')],
  ])('exits cleanly on %s', async (_name, end) => {
    const { child } = setup();
    await child.initialize();
    end(child);
    const exit = await child.exited;
    expect(exit.code).toBe(0);
  });

  it('mcp-config snippets start a working server (json) and are valid TOML for codex', async () => {
    const { dir, cleanup } = tempDir('lw-mcp-cfg-');
    cleanups.push(cleanup);
    const home = join(dir, 'home');
    const run = (...args: string[]) => execFileSync(process.execPath, [BIN, '--home', home, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LIGHTWORKER_HOME: '' } });
    const codex = parseToml(run('mcp-config', '--client', 'codex')) as any;
    const srv = codex.mcp_servers.lightworker;
    expect(srv.required).toBe(true);
    expect(srv.default_tools_approval_mode).toBe('approve');
    expect(srv.env.LIGHTWORKER_HOME).toBe(home);
    expect(srv.args).toEqual([BIN, 'mcp']);
    const claude = JSON.parse(run('mcp-config', '--client', 'claude-code'));
    expect(claude.mcpServers.lightworker.type).toBe('stdio');
    expect(JSON.parse(run('mcp-config', '--client', 'vscode')).servers.lightworker.command).toBe(srv.command);
    expect(JSON.parse(run('mcp-config', '--client', 'cursor')).mcpServers.lightworker.args).toEqual(srv.args);
    expect(JSON.parse(run('mcp-config', '--client', 'windsurf')).mcpServers.lightworker.env.LIGHTWORKER_HOME).toBe(home);
    const packaged = JSON.parse(run('mcp-config', '--client', 'json', '--launch', 'packaged'));
    expect(packaged.env.ELECTRON_RUN_AS_NODE).toBe('1');
    expect(packaged.args.join('/')).toMatch(/app\.asar\/out\/main\/cli\.js\/mcp$/);

    // Start exactly what the json snippet says, with nothing inherited but PATH and HOME (like Codex).
    const entry = JSON.parse(run('mcp-config', '--client', 'json'));
    const p = spawn(entry.command, entry.args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, ...entry.env }, cwd: '/', stdio: ['pipe', 'pipe', 'pipe'] });
    cleanups.push(() => void p.kill('SIGKILL'));
    p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) + '\n');
    const first = await new Promise<string>((resolve) => p.stdout.once('data', (d) => resolve(String(d))));
    expect(JSON.parse(first.split('\n')[0]).result.serverInfo.name).toBe('lightworker');
    p.stdin.end();
  });
});
