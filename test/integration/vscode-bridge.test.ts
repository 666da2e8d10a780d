import { request } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBridge, type Bridge } from '../../vscode-extension/src/bridge-server.js';
import { tokensEqual } from '../../vscode-extension/src/http-guard.js';
import { makeFakeExtensions, stubExtensions } from '../fixtures/vscode/fake-extensions.js';
import { tempDir } from '../helpers/env.js';
import { isAlive, until } from '../helpers/procs.js';

const stub = createRequire(import.meta.url)('../fixtures/vscode/vscode-stub.cjs');

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP exchange with the bridge; `headers` replace the defaults (Host, token) when given. */
function call(b: Bridge, method: string, path: string, opts: { headers?: Record<string, string>; body?: string | Buffer; host?: string; onResponse?: (r: import('node:http').IncomingMessage) => void } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { authorization: `Bearer ${b.token}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers };
    const req = request({ host: opts.host ?? '127.0.0.1', port: b.port, method, path, headers }, (res) => {
      opts.onResponse?.(res);
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const events = (body: string) => body.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

describe('the VS Code bridge under Node with a stub of the vscode module', () => {
  const tmp = tempDir('lw-vscode-bridge-');
  const ext = makeFakeExtensions(join(tmp.dir, 'extensions'));
  const work = join(tmp.dir, 'work');
  let bridge: Bridge;

  beforeAll(async () => {
    stub.configureStub({ extensions: stubExtensions(ext), folders: [tmp.dir] });
    (await import('node:fs')).mkdirSync(work, { recursive: true });
    bridge = await startBridge({ api: stub, extensionVersion: '0.1.0', discoveryDir: join(tmp.dir, 'discovery'), killGraceMs: 300, maxBodyBytes: 64 * 1024 });
  });
  afterAll(async () => {
    await bridge?.stop();
    tmp.cleanup();
  });
  afterEach(() => stub.configureStub({ extensions: stubExtensions(ext), folders: [tmp.dir] }));

  it('publishes port + token in a discovery file readable only by this user, and removes it on stop', async () => {
    const st = statSync(bridge.discoveryPath);
    expect(st.mode & 0o777).toBe(0o600);
    expect(statSync(join(tmp.dir, 'discovery')).mode & 0o777).toBe(0o700);
    const rec = JSON.parse(readFileSync(bridge.discoveryPath, 'utf8'));
    expect(rec).toMatchObject({ version: 1, host: '127.0.0.1', port: bridge.port, token: bridge.token, workspace_folders: [tmp.dir], pid: process.pid });
    expect(bridge.token.length).toBeGreaterThanOrEqual(40);

    const other = await startBridge({ api: stub, extensionVersion: '0.1.0', discoveryDir: join(tmp.dir, 'discovery-2') });
    expect(other.token).not.toBe(bridge.token);
    expect(existsSync(other.discoveryPath)).toBe(true);
    await other.stop();
    expect(existsSync(other.discoveryPath)).toBe(false);
  });

  it('listens on 127.0.0.1 only', async () => {
    expect(bridge.server.address()).toMatchObject({ address: '127.0.0.1', family: 'IPv4' });
    const outside = Object.values(networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal);
    if (outside) {
      const err = await call(bridge, 'GET', '/v1/health', { host: outside.address }).then(() => null, (e: NodeJS.ErrnoException) => e);
      expect(err?.code).toBe('ECONNREFUSED');
    }
  });

  it('refuses requests without the right token, from another Host, or with an Origin', async () => {
    expect((await call(bridge, 'GET', '/v1/health')).status).toBe(200);
    const noToken = await call(bridge, 'GET', '/v1/health', { headers: { authorization: '' } });
    expect(noToken.status).toBe(401);
    expect(JSON.parse(noToken.body)).toEqual({ ok: false, error: { code: 'unauthorized', message: expect.stringContaining('token') } });
    const sameLength = bridge.token.slice(0, -1) + (bridge.token.endsWith('A') ? 'B' : 'A');
    expect((await call(bridge, 'GET', '/v1/agents', { headers: { authorization: `Bearer ${sameLength}` } })).status).toBe(401);
    expect((await call(bridge, 'GET', '/v1/agents', { headers: { authorization: `Bearer ${bridge.token}x` } })).status).toBe(401);
    expect((await call(bridge, 'GET', '/v1/agents', { headers: { authorization: bridge.token } })).status).toBe(401);
    const rebinding = await call(bridge, 'GET', '/v1/agents', { headers: { host: `evil.example:${bridge.port}` } });
    expect(rebinding.status).toBe(403);
    expect(JSON.parse(rebinding.body).error.code).toBe('forbidden');
    expect((await call(bridge, 'GET', '/v1/agents', { headers: { origin: 'http://127.0.0.1:1234' } })).status).toBe(403);
    expect((await call(bridge, 'GET', '/v1/agents', { headers: { host: `localhost:${bridge.port}` } })).status).toBe(200);
    expect(tokensEqual('abc', 'abc')).toBe(true);
    expect(tokensEqual('abc', 'abd')).toBe(false);
    expect(tokensEqual('abc', 'abcd')).toBe(false);
  });

  it('limits bodies and answers bad input with JSON errors naming the field, starting nothing', async () => {
    const log = join(tmp.dir, 'argv-limits.log');
    process.env.FAKE_AGENT_LOG = log;
    try {
      const big = JSON.stringify({ prompt: 'x'.repeat(100 * 1024), cwd: work });
      const tooLarge = await call(bridge, 'POST', '/v1/turns', { body: big });
      expect(tooLarge.status).toBe(413);
      expect(JSON.parse(tooLarge.body).error.code).toBe('too_large');
      // Past the limit without a Content-Length (chunked): refused as well.
      const chunked = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: bridge.port, method: 'POST', path: '/v1/turns', headers: { authorization: `Bearer ${bridge.token}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        for (let i = 0; i < 80; i++) req.write('x'.repeat(1024));
        req.end();
      });
      expect(chunked).toBe(413);
      const notJson = await call(bridge, 'POST', '/v1/turns', { body: '{"prompt":' });
      expect([notJson.status, JSON.parse(notJson.body).error.code]).toEqual([400, 'invalid_input']);
      expect((await call(bridge, 'POST', '/v1/turns', { body: '{}', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
      const cases: [unknown, string][] = [
        [{ cwd: work }, 'prompt:'],
        [{ prompt: 'hi', cwd: 'relative/dir' }, 'cwd:'],
        [{ prompt: 'hi', cwd: join(work, 'missing') }, 'cwd:'],
        [{ prompt: 'hi', cwd: work, sandbox: 'danger-full-access' }, 'sandbox:'],
        [{ prompt: 'hi', cwd: work, agent: 'copilot' }, 'agent:'],
        [{ prompt: 'hi', cwd: work, session_id: 'a b; rm -rf /' }, 'session_id:'],
        [{ prompt: 'hi', cwd: work, env: { PATH: '/tmp' } }, 'env.PATH:'],
        [{ prompt: 'hi', cwd: work, shell: true }, 'shell:'],
        [[1, 2], 'body:'],
      ];
      for (const [body, fieldName] of cases) {
        const r = await call(bridge, 'POST', '/v1/turns', { body: JSON.stringify(body) });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(JSON.parse(r.body).error.message.startsWith(fieldName), r.body).toBe(true);
      }
      expect((await call(bridge, 'GET', '/v1/nope')).status).toBe(404);
      expect((await call(bridge, 'PUT', '/v1/turns', { body: '{}' })).status).toBe(405);
      expect(JSON.parse((await call(bridge, 'GET', '/v1/turns')).body).turns).toEqual([]);
      expect(existsSync(log)).toBe(false);
    } finally {
      delete process.env.FAKE_AGENT_LOG;
    }
  });

  it('lists the agent extensions installed in the editor and where their CLI is', async () => {
    const r = await call(bridge, 'GET', '/v1/agents');
    const { agents } = JSON.parse(r.body);
    expect(agents).toEqual([
      { id: 'anthropic.claude-code', label: 'Claude Code', version: '2.1.197', active: true, agent: 'claude-code', runnable: true, cli: join(ext.claude, 'resources', 'native-binary', 'claude'), reason: null },
      { id: 'openai.chatgpt', label: 'Codex (OpenAI)', version: '0.169.0', active: false, agent: 'codex', runnable: true, cli: join(ext.codex, 'bin', 'linux-x86_64', 'codex'), reason: null },
      { id: 'github.copilot-chat', label: 'GitHub Copilot Chat', version: '0.30.0', active: true, agent: null, runnable: false, cli: null, reason: expect.stringContaining('not a bridge target') },
    ]);
    stub.configureStub({ extensions: [], folders: [] });
    expect(JSON.parse((await call(bridge, 'GET', '/v1/agents')).body).agents).toEqual([]);
    const none = await call(bridge, 'POST', '/v1/turns', { body: JSON.stringify({ prompt: 'hi', cwd: work }) });
    expect([none.status, JSON.parse(none.body).error.code]).toEqual([409, 'worker_missing']);
  });

  it('runs a delegated turn with the extension CLI, streaming its JSON lines and showing them in an editor terminal', async () => {
    for (const agent of ['claude-code', 'codex'] as const) {
      const r = await call(bridge, 'POST', '/v1/turns', { body: JSON.stringify({ agent, prompt: 'Create hello.txt', cwd: work, sandbox: 'workspace-write', model: 'claude-sonnet-4-5', env: { LIGHTWORKER_TASK_ID: 'T1' } }) });
      expect(r.status).toBe(200);
      const ev = events(r.body);
      expect(ev[0]).toMatchObject({ type: 'turn.started', agent, turn_id: r.headers['x-lightworker-turn'] });
      expect(ev.at(-1)).toMatchObject({ type: 'turn.exited', code: 0, cancelled: false });
      const lines = ev.filter((e) => e.type === 'stdout').map((e) => JSON.parse(e.line));
      expect(lines.map((l) => l.type)).toEqual(agent === 'codex' ? ['thread.started', 'item.completed', 'turn.completed'] : ['system', 'assistant', 'result']);
      expect(readFileSync(join(work, 'hello.txt'), 'utf8')).toBe('hello from the editor agent\n');
    }
    await until(() => stub.stubState.terminals.length === 2 && stub.stubState.terminals.every((t: any) => t.output.includes('[turn ended: exit 0]')), 5000, 'terminal output');
    expect(stub.stubState.terminals[0].name).toBe('LightWorker: claude-code');
    expect(stub.stubState.terminals[0].output).toContain('Writing hello.txt.');
    expect(stub.stubState.terminals[1].output).toContain('Wrote hello.txt.');
  });

  async function startSleepingTurn(cwd: string, onResponse?: (r: import('node:http').IncomingMessage) => void) {
    const { mkdirSync } = await import('node:fs');
    mkdirSync(cwd, { recursive: true });
    const reply = call(bridge, 'POST', '/v1/turns', { body: JSON.stringify({ agent: 'claude-code', prompt: 'FAKE_AGENT_SLEEP', cwd }), onResponse });
    const pidFile = join(cwd, '.fake-agent-pids.json');
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').length > 0, 10_000, 'the agent pid file');
    const pids = JSON.parse(readFileSync(pidFile, 'utf8')) as { agent: number; grandchild: number };
    expect(isAlive(pids.agent) && isAlive(pids.grandchild)).toBe(true);
    const [turn] = JSON.parse((await call(bridge, 'GET', '/v1/turns')).body).turns;
    return { reply, pids, turnId: turn.turn_id as string };
  }

  it('cancels a first turn (no session yet) by killing the whole process tree, SIGTERM-deaf members too', async () => {
    const { reply, pids, turnId } = await startSleepingTurn(join(tmp.dir, 'cancel-delete'));
    const del = await call(bridge, 'DELETE', `/v1/turns/${turnId}`);
    expect(JSON.parse(del.body)).toEqual({ ok: true, turn_id: turnId, cancelled: true, ended: true });
    // DELETE answers once the tree is gone.
    expect(isAlive(pids.agent)).toBe(false);
    expect(isAlive(pids.grandchild)).toBe(false);
    const ev = events((await reply).body);
    expect(ev.some((e) => e.type === 'stdout')).toBe(false);
    expect(ev.at(-1)).toMatchObject({ type: 'turn.exited', turn_id: turnId, cancelled: true, reason: 'cancelled by LightWorker' });
    expect((await call(bridge, 'DELETE', `/v1/turns/${turnId}`)).status).toBe(404);
  });

  it('refuses a turn past the limit of turns running at once', async () => {
    const small = await startBridge({ api: stub, extensionVersion: '0.1.0', discoveryDir: join(tmp.dir, 'discovery-small'), killGraceMs: 300, maxTurns: 1 });
    const saved = bridge;
    bridge = small;
    try {
      const { reply, turnId } = await startSleepingTurn(join(tmp.dir, 'busy'));
      const second = await call(small, 'POST', '/v1/turns', { body: JSON.stringify({ agent: 'codex', prompt: 'hi', cwd: work }) });
      expect([second.status, JSON.parse(second.body).error.code]).toEqual([429, 'busy']);
      expect((await call(small, 'DELETE', `/v1/turns/${turnId}`)).status).toBe(200);
      await reply;
    } finally {
      bridge = saved;
      await small.stop();
    }
  });

  it('cancels when LightWorker drops the connection, and when the user closes the turn terminal', async () => {
    let response: import('node:http').IncomingMessage | null = null;
    const a = await startSleepingTurn(join(tmp.dir, 'cancel-drop'), (r) => (response = r));
    a.reply.catch(() => {});
    response!.destroy();
    await until(() => !isAlive(a.pids.agent) && !isAlive(a.pids.grandchild), 10_000, 'the tree to end after the connection dropped');
    await until(async () => JSON.parse((await call(bridge, 'GET', '/v1/turns')).body).turns.length === 0, 5000, 'the turn to end');

    const b = await startSleepingTurn(join(tmp.dir, 'cancel-terminal'));
    stub.stubState.terminals.at(-1).close();
    await until(() => !isAlive(b.pids.agent) && !isAlive(b.pids.grandchild), 10_000, 'the tree to end after the terminal closed');
    expect(events((await b.reply).body).at(-1)).toMatchObject({ type: 'turn.exited', cancelled: true, reason: 'terminal closed' });
  });
});
