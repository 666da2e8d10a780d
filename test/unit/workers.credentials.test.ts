import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { redactText } from '../../main/core/redact.js';
import { recoverOrphans } from '../../main/scheduler/recovery.js';
import { resolveAuth, stageLogin, STAGED_CREDENTIALS } from '../../main/workers/credentials.js';
import { describeRoute, formatRoute } from '../../main/workers/route-record.js';
import { makeHome, tempDir } from '../helpers/env.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

/** A fake user home with the given files. */
function userHome(files: Record<string, string> = {}): string {
  const { dir, cleanup } = tempDir('lw-auth-');
  cleanups.push(cleanup);
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), body);
  }
  return dir;
}

const gw = { name: 'zai', keyEnv: 'ZAI_KEY', key: 'sk-zai-0123456789abcdef' };

describe('resolveAuth: what a worker authenticates with', () => {
  it('auto: the CLI login when it exists, with no LightWorker-specific setting', () => {
    const home = userHome({ '.codex/auth.json': '{"OPENAI_API_KEY":"sk-x"}' });
    const a = resolveAuth('codex', {}, null, { HOME: home, OPENAI_API_KEY: 'sk-env-0123456789abcdef' });
    expect(a).toMatchObject({ mode: 'login', ok: true, source: 'login ~/.codex/auth.json', loginFile: join(home, '.codex/auth.json'), env: {} });
  });

  it('auto: falls back to the CLI key variables, and says so', () => {
    const home = userHome();
    const a = resolveAuth('codex', {}, null, { HOME: home, OPENAI_API_KEY: 'sk-env-0123456789abcdef' });
    expect(a).toMatchObject({ mode: 'env', ok: true, source: 'env OPENAI_API_KEY', env: { OPENAI_API_KEY: 'sk-env-0123456789abcdef' } });
  });

  it('auto with nothing: not ok, and the hint names every fix', () => {
    const a = resolveAuth('claude-code', {}, null, { HOME: userHome() });
    expect(a.ok).toBe(false);
    expect(a.hint).toMatch(/\/login/);
    expect(a.hint).toMatch(/ANTHROPIC_API_KEY/);
    expect(a.hint).toMatch(/gateway/);
  });

  it('a routed gateway wins in auto mode; its missing key is reported by name', () => {
    const home = userHome({ '.codex/auth.json': '{}' });
    expect(resolveAuth('codex', {}, gw, { HOME: home })).toMatchObject({ mode: 'gateway', ok: true, source: 'gateway zai (ZAI_KEY)', loginFile: null });
    const missing = resolveAuth('codex', {}, { ...gw, key: null }, { HOME: home });
    expect(missing).toMatchObject({ mode: 'gateway', ok: false });
    expect(missing.hint).toMatch(/export ZAI_KEY/);
  });

  it('explicit modes: login without a file, env with extra keys, gateway without one, none', () => {
    const home = userHome();
    const login = resolveAuth('opencode', { auth: 'login' }, null, { HOME: home, OPENAI_API_KEY: 'sk-env-0123456789abcdef' });
    expect(login).toMatchObject({ mode: 'login', ok: false });
    expect(login.hint).toMatch(/opencode auth login/);
    const env = resolveAuth('codex', { auth: 'env', keys: ['MY_EXTRA_KEY'] }, null, { HOME: home, MY_EXTRA_KEY: 'sk-extra-0123456789', UNRELATED_TOKEN: 'nope-0123456789' });
    expect(env).toMatchObject({ mode: 'env', ok: true, env: { MY_EXTRA_KEY: 'sk-extra-0123456789' } });
    expect(resolveAuth('codex', { auth: 'gateway' }, null, { HOME: home })).toMatchObject({ mode: 'gateway', ok: false });
    expect(resolveAuth('codex', { auth: 'none' }, null, { HOME: home })).toMatchObject({ mode: 'none', ok: true });
    // A linked CLI uses its own config under the user's HOME unless told otherwise.
    expect(resolveAuth('myagent', {}, null, { HOME: home })).toMatchObject({ mode: 'none', ok: true });
  });

  it('an exported base URL applies only on opt-in, and is reported when ignored', () => {
    const home = userHome({ '.claude/.credentials.json': JSON.stringify({ claudeAiOauth: { accessToken: 'sk-ant-oat01-x' } }) });
    const env = { HOME: home, ANTHROPIC_BASE_URL: 'https://open.bigmodel.cn/api/anthropic' };
    const ignored = resolveAuth('claude-code', {}, null, env);
    expect(ignored.baseUrls).toEqual({});
    expect(ignored.hint).toMatch(/ANTHROPIC_BASE_URL is not used.*inherit_base_url = true/);
    expect(resolveAuth('claude-code', { inherit_base_url: true }, null, env).baseUrls).toEqual({ ANTHROPIC_BASE_URL: env.ANTHROPIC_BASE_URL });
    // The exported pair (base URL + its token) goes together, ahead of the vendor login.
    const pair = resolveAuth('claude-code', { inherit_base_url: true }, null, { ...env, ANTHROPIC_AUTH_TOKEN: 'glm-token-0123456789abcdef' });
    expect(pair).toMatchObject({ mode: 'env', source: 'env ANTHROPIC_AUTH_TOKEN', env: { ANTHROPIC_AUTH_TOKEN: 'glm-token-0123456789abcdef' } });
  });
});

describe('a login file is checked for its shape', () => {
  const cases: [string, string, Record<string, string>, RegExp | null][] = [
    ['codex', '.codex/auth.json', { ok: '{"OPENAI_API_KEY":"sk-x"}', tokens: '{"tokens":{"refresh_token":"r"}}' }, null],
    ['codex', '.codex/auth.json', { empty: '', braces: '{}', cut: '{"tokens": {"acc', other: '{"tokens":{}}', array: '[1]' }, /empty|not valid JSON|holds no credential|not a JSON object/],
    ['claude-code', '.claude/.credentials.json', { ok: '{"claudeAiOauth":{"accessToken":"a"}}' }, null],
    ['claude-code', '.claude/.credentials.json', { braces: '{}', wrong: '{"OPENAI_API_KEY":"sk-x"}' }, /empty JSON object|expected claudeAiOauth/],
    ['opencode', '.local/share/opencode/auth.json', { ok: '{"anthropic":{"type":"oauth","refresh":"r","access":"a"}}' }, null],
    ['opencode', '.local/share/opencode/auth.json', { keyless: '{"openai":{"type":"api"}}', braces: '{}' }, /holds no credential|empty JSON object/],
  ];
  for (const [worker, rel, bodies, bad] of cases) {
    for (const [label, body] of Object.entries(bodies)) {
      it(`${worker}: ${label} is ${bad ? 'not ' : ''}a usable login`, () => {
        const a = resolveAuth(worker, { auth: 'login' }, null, { HOME: userHome({ [rel]: body }) });
        expect(a.ok).toBe(!bad);
        if (bad) {
          expect(a.source).toBe(`login ~/${rel} (unusable)`);
          expect(a.hint).toMatch(bad);
        }
      });
    }
  }
});

describe('stageLogin: the user login for one turn', () => {
  it('copies the file, writes a refreshed token back, and leaves no copy behind', () => {
    const home = userHome({ '.codex/auth.json': '{"tokens":{"refresh_token":"old"}}' });
    const src = join(home, '.codex/auth.json');
    const dest = join(home, 'run', 'codex-home', 'auth.json');
    const release = stageLogin(src, dest);
    expect(readFileSync(dest, 'utf8')).toBe('{"tokens":{"refresh_token":"old"}}');
    writeFileSync(dest, '{"tokens":{"refresh_token":"rotated"}}');
    release();
    expect(readFileSync(src, 'utf8')).toBe('{"tokens":{"refresh_token":"rotated"}}');
    expect(existsSync(dest)).toBe(false);
  });

  it('registers the login\'s tokens for redaction', () => {
    const token = 'eyJhbGciOiJSUzI1NiJ9.login-access-token-0123456789';
    const home = userHome({ '.codex/auth.json': JSON.stringify({ tokens: { access_token: token } }) });
    stageLogin(join(home, '.codex/auth.json'), join(home, 'run', 'auth.json'))();
    expect(redactText(`the worker printed ${token}`)).not.toContain(token);
  });

  it('never overwrites a login the user changed meanwhile', () => {
    const home = userHome({ '.codex/auth.json': 'v1' });
    const src = join(home, '.codex/auth.json');
    const dest = join(home, 'run', 'auth.json');
    const release = stageLogin(src, dest);
    writeFileSync(dest, 'refreshed-by-worker');
    writeFileSync(src, 'user-logged-in-again');
    release();
    expect(readFileSync(src, 'utf8')).toBe('user-logged-in-again');
    expect(existsSync(dest)).toBe(false);
  });
});

describe('describeRoute: what `show` records for a turn', () => {
  it('names the gateway host, auth style and mapped model, never the key', () => {
    const auth = resolveAuth('claude-code', {}, gw, { HOME: userHome() });
    const r = describeRoute('claude-code', {
      model: 'claude-sonnet-4-5',
      gateway: { name: 'zai', baseUrl: 'https://open.bigmodel.cn/api/anthropic', keyEnv: 'ZAI_KEY', key: gw.key, authStyle: 'bearer', modelMap: { 'claude-sonnet-4-5': 'glm-4.6' } },
    }, auth);
    expect(r).toEqual({ worker: 'claude-code', gateway: 'zai', host: 'open.bigmodel.cn', authStyle: 'bearer', credential: 'gateway zai (ZAI_KEY)', model: 'claude-sonnet-4-5', providerModel: 'glm-4.6' });
    expect(JSON.stringify(r)).not.toContain(gw.key);
    expect(formatRoute(r)).toBe('gateway zai → open.bigmodel.cn (bearer), model claude-sonnet-4-5 → glm-4.6, credential gateway zai (ZAI_KEY)');
  });
});

describe('takeover removes credentials a dead runner left staged', () => {
  it('deletes every staged login of the orphaned attempt, nothing else', async () => {
    const h = makeHome();
    cleanups.push(h.cleanup);
    const { task } = await h.call('delegate_task', { objective: 'x', workspace: h.repo });
    h.engine.db.prepare("UPDATE tasks SET status = 'running', runner_id = 'gone' WHERE id = ?").run(task.id);
    const runDir = join(h.engine.home.artifacts, task.id, 'attempt-1');
    for (const rel of [...STAGED_CREDENTIALS, 'codex-home/sessions/keep.jsonl']) {
      mkdirSync(join(runDir, rel, '..'), { recursive: true });
      writeFileSync(join(runDir, rel), '{"token":"x"}');
    }
    expect(await recoverOrphans(h.engine, 'me', 0)).toEqual([task.id]);
    for (const rel of STAGED_CREDENTIALS) expect(existsSync(join(runDir, rel))).toBe(false);
    expect(existsSync(join(runDir, 'codex-home/sessions/keep.jsonl'))).toBe(true);
  });
});
