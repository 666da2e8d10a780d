import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayRoute, WorkerAdapter, WorkerTurn } from '../../main/workers/adapter.js';
import { claudeCodeAdapter } from '../../main/workers/claude-code.js';
import { codexAdapter } from '../../main/workers/codex.js';
import { resolveAuth } from '../../main/workers/credentials.js';
import { minimalEnv } from '../../main/workers/env.js';
import { opencodeAdapter } from '../../main/workers/opencode.js';
import { startGateway, type Gateway, type GatewayRequest } from '../fixtures/gateway/index.js';
import { cliUnavailable, makeBench, makeTurn, play, type Bench } from '../helpers/worker-cli.js';

// Real codex, claude-code and opencode through the scripted gateway, which accepts only known keys:
// the user's CLI login reaches the worker with no LightWorker-specific setting beyond the base URL the
// test needs, gateways get the key the way they ask for it (Bearer or x-api-key) and our model name
// mapped to theirs, and what a worker's shell sees is LightWorker's allow-list.

const T = 150_000;
const LOGIN_KEY = 'sk-login-0123456789abcdef';
const GW_KEY = 'sk-gateway-fedcba9876543210';
const UNRELATED = 'sk-unrelated-0000111122223333';

interface Cli {
  worker: string;
  bin: string;
  adapter: WorkerAdapter;
  model: string;
  /** The login file under the user's home, with a credential holding LOGIN_KEY. */
  login: [string, unknown];
}

const CLIS: Cli[] = [
  { worker: 'codex', bin: 'codex', adapter: codexAdapter, model: 'gpt-5.5', login: ['.codex/auth.json', { OPENAI_API_KEY: LOGIN_KEY }] },
  {
    worker: 'claude-code', bin: 'claude', adapter: claudeCodeAdapter, model: 'claude-sonnet-4-5',
    login: ['.claude/.credentials.json', { claudeAiOauth: { accessToken: LOGIN_KEY, refreshToken: 'sk-ant-ort01-test', expiresAt: Date.now() + 86_400_000, scopes: ['user:inference'], subscriptionType: 'max' } }],
  },
  { worker: 'opencode', bin: 'opencode', adapter: opencodeAdapter, model: 'gpt-5.5', login: ['.local/share/opencode/auth.json', { openai: { type: 'api', key: LOGIN_KEY } }] },
];

/**
 * Claude Code in `-p` asks before running `env` (and denies it): the probe allows Bash for this test
 * only. What the shell sees does not depend on that permission.
 */
function allowingBash(a: WorkerAdapter): WorkerAdapter {
  return {
    ...a,
    async buildSpawn(turn) {
      const spec = await a.buildSpawn(turn);
      spec.args.push('--allowedTools', 'Bash');
      return spec;
    },
  };
}

/** Model requests only — plus Claude Code's keyless `HEAD /` connection warm-up, which carries nothing. */
function nonModelRequests(gw: Gateway): GatewayRequest[] {
  return gw.requests.filter((r) => !(r.method === 'POST' && r.api) && !(r.method === 'HEAD' && r.path === '/' && r.credential.header === 'none'));
}

for (const cli of CLIS) {
  const why = await cliUnavailable(cli.bin);
  if (why) console.warn(`skipping ${cli.worker} auth tests: ${why}`);

  describe.skipIf(why !== null)(`${cli.worker}: credentials, gateways and environment (real CLI)`, () => {
    let bench: Bench;
    let gw: Gateway;
    let userHome: string;
    beforeAll(async () => {
      bench = await makeBench();
      gw = await startGateway({ keys: { login: LOGIN_KEY, gateway: GW_KEY }, keepBodies: true });
      userHome = join(bench.root, 'user-home');
      const [rel, body] = cli.login;
      mkdirSync(join(userHome, rel, '..'), { recursive: true });
      writeFileSync(join(userHome, rel), JSON.stringify(body));
      // The user's shell start-up files: a worker's shell must not run them.
      for (const f of ['.bashrc', '.profile', '.bash_profile']) writeFileSync(join(userHome, f), `export RC_RAN=${f}\necho rc-noise-${f}\n`);
    });
    afterAll(async () => {
      await gw?.close();
      await bench?.cleanup();
    });

    /** The environment LightWorker itself runs in: the user's home and some unrelated secrets. */
    const userEnv = (): NodeJS.ProcessEnv => ({
      PATH: process.env.PATH, HOME: userHome, LANG: 'C.UTF-8', UNRELATED_API_KEY: UNRELATED, LIGHTWORKER_TOKEN: 'lw-token-0123456789abcdef',
      OPENAI_BASE_URL: `${gw.url}/v1`, ANTHROPIC_BASE_URL: gw.url,
    });
    const gateway = (over: Partial<GatewayRoute> = {}): GatewayRoute => ({ name: 'scripted', baseUrl: `${gw.url}/v1`, keyEnv: 'LW_AUTH_TEST_KEY', key: GW_KEY, ...over });
    const turn = (script: string, over: Partial<WorkerTurn> & { kind?: 'execute' | 'explore' } = {}): WorkerTurn =>
      makeTurn(bench, cli.worker, cli.model, { prompt: `Do the task. [[script:${script}]]`, baseEnv: minimalEnv({ LIGHTWORKER_DEPTH: '1' }, userEnv()), ...over });
    const requestsOf = (script: string) => gw.requests.filter((r) => r.summary?.script === script && !r.summary.side);

    it('the user\'s CLI login reaches the worker (auto mode), is never changed, and no copy stays behind', { timeout: T }, async () => {
      gw.addScript('login', { turns: [{ text: 'Signed in with your login.' }] });
      // inherit_base_url only to point the CLI's own provider at the scripted gateway instead of its vendor.
      const auth = resolveAuth(cli.worker, { inherit_base_url: true }, null, userEnv());
      expect(auth).toMatchObject({ mode: 'login', ok: true });
      const t = turn('login', { gateway: null, auth });
      const before = readFileSync(join(userHome, cli.login[0]), 'utf8');
      const { result } = await play(cli.adapter, t);
      expect(result.error).toBeUndefined();
      expect(result.finalText).toContain('Signed in with your login.');
      const reqs = requestsOf('login');
      expect(reqs.length).toBeGreaterThan(0);
      for (const r of reqs) expect(r.credential).toEqual({ header: 'bearer', key: 'login' });
      expect(readFileSync(join(userHome, cli.login[0]), 'utf8')).toBe(before);
      const leftovers = readdirSync(t.runDir, { recursive: true, encoding: 'utf8' }).filter((p) => /auth\.json$|credentials\.json$/.test(p));
      expect(leftovers).toEqual([]);
    });

    it('without a login or key, the turn is refused up front with the fix (nothing runs)', () => {
      const a = resolveAuth(cli.worker, {}, null, { HOME: join(bench.root, 'empty-home') });
      expect(a.ok).toBe(false);
      expect(a.hint).toMatch(/login|setup-token/);
    });

    it('env probe: the shell a worker runs sees the allow-list only — no rc file, no unrelated key, no LightWorker token', { timeout: T }, async () => {
      gw.addScript('env', { turns: [{ text: 'Probing.', tools: [{ shell: 'env > env-probe.txt' }, { shell: 'echo "flags=$-" > flags-probe.txt' }] }, { text: 'Probed.' }] });
      const t = turn('env', { gateway: gateway({ keyEnv: 'LW_AUTH_TEST_KEY' }) });
      const adapter = cli.worker === 'claude-code' ? allowingBash(cli.adapter) : cli.adapter;
      const { result } = await play(adapter, t);
      expect(result.error).toBeUndefined();
      const env = readFileSync(join(bench.worktree, 'env-probe.txt'), 'utf8');
      const flags = readFileSync(join(bench.worktree, 'flags-probe.txt'), 'utf8').trim();
      expect(env).not.toMatch(/RC_RAN|rc-noise/);
      expect(flags).toMatch(/^flags=[a-zA-Z]*$/);
      expect(flags).not.toContain('i'); // not an interactive shell
      expect(env).not.toContain(UNRELATED);
      expect(env).not.toContain('LIGHTWORKER_TOKEN');
      expect(env).not.toContain(userHome + '\n'); // HOME is a private folder, not the user's
      expect(env).toMatch(/^LIGHTWORKER_DEPTH=1$/m);
      if (cli.worker === 'claude-code') {
        // Claude Code hands its own key variable to its tools (documented); nothing else.
        expect(env.match(/sk-[\w-]+/g) ?? []).toEqual([GW_KEY]);
      } else {
        expect(env).not.toContain(GW_KEY);
        expect(env).not.toContain('LW_AUTH_TEST_KEY');
      }
      for (const r of requestsOf('env')) expect(r.credential.key).toBe('gateway');
      // No request of the worker reached the model gateway except model calls.
      expect(nonModelRequests(gw)).toEqual([]);
      for (const f of ['env-probe.txt', 'flags-probe.txt']) writeFileSync(join(bench.worktree, f), '');
    });

    it('a gateway gets our model name mapped to the provider\'s, and the key in the style it asks for', { timeout: T }, async () => {
      gw.addScript('map', { turns: [{ text: 'Mapped.' }] });
      for (const style of ['bearer', 'x-api-key'] as const) {
        gw.clearRequests();
        const t = turn('map', { kind: 'explore', gateway: gateway({ authStyle: style, modelMap: { [cli.model]: 'glm-4.6' } }), model: cli.model });
        const { result } = await play(cli.adapter, t);
        expect(result.error).toBeUndefined();
        const reqs = requestsOf('map');
        expect(reqs.length).toBeGreaterThan(0);
        for (const r of reqs) {
          expect(r.summary!.model).toBe('glm-4.6');
          expect(r.credential).toEqual({ header: style, key: 'gateway' });
        }
      }
    });

    it('a gateway that refuses the key fails the turn clearly', { timeout: T }, async () => {
      gw.addScript('bad-key', { turns: [{ text: 'never' }] });
      const t = turn('bad-key', { kind: 'explore', gateway: gateway({ key: 'sk-wrong-key-000000000000' }) });
      const { result } = await play(cli.adapter, t);
      expect(result.ok).toBe(false);
      expect(result.error?.message).toMatch(/401|unknown credential|auth|API key/i);
      expect(existsSync(t.runDir)).toBe(true);
    });
  });
}
