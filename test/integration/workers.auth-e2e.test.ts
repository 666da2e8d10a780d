import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, tempDir, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

// Through the shipped CLI: `workers --json` and `doctor` tell what a worker will really authenticate
// with, and a user whose CLI is logged in runs a real codex task with no auth setting at all.

const LOGIN_KEY = 'sk-login-e2e-0123456789abcdef';
/** The user's environment, with every key variable of the host cleared. */
const CLEAR = { OPENAI_API_KEY: '', CODEX_API_KEY: '', ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', CLAUDE_CODE_OAUTH_TOKEN: '', CODEX_HOME: '', CLAUDE_CONFIG_DIR: '', XDG_DATA_HOME: '', OPENAI_BASE_URL: '', ANTHROPIC_BASE_URL: '' };

interface Listed {
  name: string;
  authenticated: boolean | null;
  auth: { mode: string; source: string; ok: boolean; hint: string | null };
}

describe('workers --json and doctor tell the truth about credentials', () => {
  let h: TestHome;
  let user: { dir: string; cleanup: () => void };
  beforeAll(() => {
    h = makeHome();
    user = tempDir('lw-user-');
  });
  afterAll(() => {
    h.cleanup();
    user.cleanup();
  });
  const workers = async (env: Record<string, string>) => {
    const r = await runCli(['workers', '--json'], { home: h.home, env: { ...CLEAR, HOME: user.dir, ...env } });
    expect(r.code, r.stderr).toBe(0);
    return Object.fromEntries((JSON.parse(r.stdout).workers as Listed[]).map((w) => [w.name, w]));
  };

  it('a key that would not be passed is not reported as auth; a missing login says `codex login`', { timeout: 60_000 }, async () => {
    writeFileSync(h.engine.home.config, '[workers.codex]\nauth = "login"\n');
    const w = await workers({ OPENAI_API_KEY: 'sk-env-0123456789abcdef' });
    expect(w.codex.auth).toMatchObject({ mode: 'login', ok: false });
    expect(w.codex.auth.hint).toMatch(/codex login/);
    expect(w.codex.authenticated).toBe(false);
    const doctor = await runCli(['doctor', '--json'], { home: h.home, env: { ...CLEAR, HOME: user.dir } });
    const check = (JSON.parse(doctor.stdout).checks as { name: string; ok: boolean; fix?: string; optional?: boolean }[]).find((c) => c.name === 'worker codex')!;
    expect(check).toMatchObject({ ok: false, optional: true });
    expect(check.fix).toMatch(/codex login/);
  });

  it('auto: the login when present, else the CLI key variables; an exported base URL is reported as ignored', { timeout: 60_000 }, async () => {
    writeFileSync(h.engine.home.config, '');
    let w = await workers({ OPENAI_API_KEY: 'sk-env-0123456789abcdef', ANTHROPIC_BASE_URL: 'https://open.bigmodel.cn/api/anthropic' });
    expect(w.codex.auth).toMatchObject({ mode: 'env', ok: true, source: 'env OPENAI_API_KEY' });
    expect(w['claude-code'].auth.ok).toBe(false);
    expect(w['claude-code'].auth.hint).toMatch(/ANTHROPIC_API_KEY/);
    expect(w.mock.auth.ok).toBe(true);
    mkdirSync(join(user.dir, '.claude'), { recursive: true });
    writeFileSync(join(user.dir, '.claude', '.credentials.json'), JSON.stringify({ claudeAiOauth: { accessToken: 'sk-ant-oat01-e2e-0123456789', refreshToken: 'sk-ant-ort01-e2e' } }));
    w = await workers({ ANTHROPIC_BASE_URL: 'https://open.bigmodel.cn/api/anthropic' });
    expect(w['claude-code'].auth).toMatchObject({ mode: 'login', ok: true, source: 'login ~/.claude/.credentials.json' });
    expect(w['claude-code'].auth.hint).toMatch(/ANTHROPIC_BASE_URL is not used/);
  });
});

describe('a login file that holds no credential', () => {
  it('is not ok in workers --json and doctor, which say what is wrong with it', { timeout: 90_000 }, async () => {
    const h = makeHome();
    const user = tempDir('lw-user-');
    try {
      const env = { ...CLEAR, HOME: user.dir };
      mkdirSync(join(user.dir, '.codex'), { recursive: true });
      mkdirSync(join(user.dir, '.claude'), { recursive: true });
      mkdirSync(join(user.dir, '.local', 'share', 'opencode'), { recursive: true });
      writeFileSync(join(user.dir, '.codex', 'auth.json'), '{}');
      writeFileSync(join(user.dir, '.claude', '.credentials.json'), '{"claudeAiOauth": {"accessTo');
      writeFileSync(join(user.dir, '.local', 'share', 'opencode', 'auth.json'), '{"openai": {"type": "api"}}');
      const r = await runCli(['workers', '--json'], { home: h.home, env });
      const w = Object.fromEntries((JSON.parse(r.stdout).workers as Listed[]).map((x) => [x.name, x]));
      expect(w.codex.auth).toMatchObject({ ok: false, source: 'login ~/.codex/auth.json (unusable)' });
      expect(w.codex.auth.hint).toMatch(/~\/\.codex\/auth\.json is an empty JSON object \(\{\}\): it holds no token or key; run `codex login`/);
      expect(w['claude-code'].auth).toMatchObject({ ok: false });
      expect(w['claude-code'].auth.hint).toMatch(/\.credentials\.json is not valid JSON/);
      expect(w.opencode.auth).toMatchObject({ ok: false });
      expect(w.opencode.auth.hint).toMatch(/holds no credential \(expected a provider entry/);
      const doctor = await runCli(['doctor', '--json'], { home: h.home, env });
      const check = (JSON.parse(doctor.stdout).checks as { name: string; ok: boolean; detail: string; fix?: string }[]).find((c) => c.name === 'worker codex')!;
      expect(check).toMatchObject({ ok: false, detail: expect.stringMatching(/not usable without credentials/) });
      expect(check.fix).toMatch(/empty JSON object/);
      // A key variable still works, and the broken login is named rather than silently skipped.
      const withKey = JSON.parse((await runCli(['workers', '--json'], { home: h.home, env: { ...env, OPENAI_API_KEY: 'sk-env-0123456789abcdef' } })).stdout).workers.find((x: Listed) => x.name === 'codex');
      expect(withKey.auth).toMatchObject({ ok: true, mode: 'env', hint: expect.stringMatching(/auth\.json is an empty JSON object .*so it is not used/) });
    } finally {
      h.cleanup();
      user.cleanup();
    }
  });
});

describe('a worker without credentials', () => {
  it('fails its task at once with auth_missing and the fix, without starting the CLI', { timeout: 90_000 }, async () => {
    const h = makeHome();
    const user = tempDir('lw-user-');
    try {
      const env = { ...CLEAR, HOME: user.dir };
      const sub = await runCli(['submit', 'x', '--workspace', h.repo, '--worker', 'codex', '--json'], { home: h.home, env });
      const id = JSON.parse(sub.stdout).task.id as string;
      await runCli(['run', '--until-idle', '--timeout', '60'], { home: h.home, env, timeoutMs: 80_000 });
      const shown = JSON.parse((await runCli(['show', id, '--json'], { home: h.home })).stdout);
      expect(shown.task.status).toBe('failed');
      expect(shown.task.error.code).toBe('auth_missing');
      expect(shown.task.error.message).toMatch(/codex login.*OPENAI_API_KEY.*gateway/);
      expect(shown.task.pid).toBeNull();
      const { events } = await h.call('get_events', { task_id: id, limit: 1000 });
      expect(events.map((e: { type: string }) => e.type)).not.toContain('worker.started');
    } finally {
      h.cleanup();
      user.cleanup();
    }
  });
});

describe('a linked CLI gets the keys its auth setting names, and no other', () => {
  it('auth = "env" with keys passes those variables; unrelated secrets stay out', { timeout: 90_000 }, async () => {
    const h = makeHome();
    try {
      const probe = 'console.log(JSON.stringify({ mine: process.env.MY_AGENT_KEY ?? null, other: process.env.UNRELATED_API_KEY ?? null, token: process.env.LIGHTWORKER_TOKEN ?? null }))';
      writeFileSync(h.engine.home.config, `[workers.probe]\ncommand = ${JSON.stringify([process.execPath, '-e', probe, '{prompt}'])}\nauth = "env"\nkeys = ["MY_AGENT_KEY"]\n`);
      const env = { MY_AGENT_KEY: 'sk-agent-0123456789abcdef', UNRELATED_API_KEY: 'sk-unrelated-0123456789', LIGHTWORKER_TOKEN: 'lw-0123456789abcdef' };
      const sub = await runCli(['submit', 'probe', '--workspace', h.repo, '--worker', 'probe', '--json'], { home: h.home, env });
      expect(sub.code, sub.stderr).toBe(0);
      const id = JSON.parse(sub.stdout).task.id as string;
      await runCli(['run', '--until-idle', '--timeout', '60'], { home: h.home, env, timeoutMs: 80_000 });
      const t = JSON.parse((await runCli(['show', id, '--json'], { home: h.home })).stdout).task;
      expect(t.status, JSON.stringify(t.error)).toBe('completed');
      // The key reaches the worker; what LightWorker stores of it is redacted.
      expect(t.result).toEqual({ mine: '[REDACTED]', other: null, token: null });
    } finally {
      h.cleanup();
    }
  });
});

describe('a logged-in user runs a real codex task with no auth setting (lightworker run)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({
      keys: { login: LOGIN_KEY },
      script: { turns: [{ text: 'Writing.', tools: [{ write: { path: 'hello.txt', content: 'hi\n' } }] }, { json: { summary: 'Wrote hello.txt.', files_changed: ['hello.txt'], notes: null } }] },
    });
  });
  afterAll(() => gw?.close());

  it('completes through the login, and `show` names the route', { timeout: 180_000 }, async (ctx) => {
    const why = await cliUnavailable('codex');
    if (why) ctx.skip();
    const h = makeHome();
    const user = tempDir('lw-user-');
    try {
      mkdirSync(join(user.dir, '.codex'), { recursive: true });
      writeFileSync(join(user.dir, '.codex', 'auth.json'), JSON.stringify({ OPENAI_API_KEY: LOGIN_KEY }));
      // Only the base URL is configured (the scripted gateway stands in for OpenAI); no auth setting.
      writeFileSync(h.engine.home.config, '[workers.codex]\ninherit_base_url = true\n');
      const env = { ...CLEAR, HOME: user.dir, OPENAI_BASE_URL: `${gw.url}/v1` };
      const sub = await runCli(['submit', 'Create hello.txt', '--kind', 'execute', '--workspace', h.repo, '--worker', 'codex', '--mode', 'auto_execute', '--json'], { home: h.home, env });
      expect(sub.code, sub.stderr).toBe(0);
      const id = JSON.parse(sub.stdout).task.id as string;
      const ran = await runCli(['run', '--until-idle', '--timeout', '150'], { home: h.home, env, timeoutMs: 170_000 });
      const show = await runCli(['show', id], { home: h.home, env });
      const json = JSON.parse((await runCli(['show', id, '--json'], { home: h.home, env })).stdout);
      expect(json.task.status, `${ran.stderr}\n${show.stdout}`).toBe('completed');
      expect(json.route).toMatchObject({ worker: 'codex', gateway: null, host: `127.0.0.1:${gw.port}`, authStyle: 'login', credential: 'login ~/.codex/auth.json', model: 'gpt-5.5' });
      expect(show.stdout).toMatch(new RegExp(`route: +127\\.0\\.0\\.1:${gw.port} \\(login\\), model gpt-5\\.5, credential login ~/\\.codex/auth\\.json`));
      const model = gw.requests.filter((r) => r.api);
      expect(model.length).toBeGreaterThan(0);
      for (const r of model) expect(r.credential).toEqual({ header: 'bearer', key: 'login' });
    } finally {
      h.cleanup();
      user.cleanup();
    }
  });
});
