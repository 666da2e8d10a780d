import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { makeHome, makeRepo, tempDir } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { defaultConfig } from '../../main/core/config.js';
import { Engine } from '../../main/engine.js';
import { listEvents } from '../../main/store/events.js';
import { listTasks } from '../../main/store/tasks.js';

/** Settings that validate, keep config.toml as written, and reach running processes. */
let t: ReturnType<typeof tempDir>;
let repo: string;
let n = 0;
const children: ChildProcess[] = [];

const HAND_WRITTEN = `# my settings — keep this comment
[scheduler]
max_concurrency = 4   # cores I can spare

per_root = 2

# models I pay for
[models]
allow = ["gpt-5.5", "gpt-5.5-mini", "mock-model"]
fast = "gpt-5.5-mini"  # cheap one
reasoning = "gpt-5.5"
per_worker = {}
`;

beforeAll(() => {
  t = tempDir('lw-settings-');
  repo = makeRepo(join(t.dir, 'repo'));
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  t.cleanup();
});

function homeWith(toml: string): { home: string; config: string } {
  const home = join(t.dir, `home-${++n}`);
  const config = join(home, 'config.toml');
  mkdirSync(home, { recursive: true });
  writeFileSync(config, toml);
  return { home, config };
}

describe('settings set', () => {
  it('changes one value in place: every comment, blank line and other key stays as written', async () => {
    const { home, config } = homeWith(HAND_WRITTEN);
    const r = await runCli(['settings', 'set', 'scheduler.max_concurrency', '8'], { home });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(HAND_WRITTEN.replace('max_concurrency = 4 ', 'max_concurrency = 8 '));
    const add = await runCli(['settings', 'set', 'approvals.allow_mcp', 'true'], { home });
    expect(add.code, add.stderr).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(`${HAND_WRITTEN.replace('max_concurrency = 4 ', 'max_concurrency = 8 ')}\n[approvals]\nallow_mcp = true\n`);
    const shown = JSON.parse((await runCli(['settings', '--json'], { home })).stdout);
    expect(shown.config.scheduler).toMatchObject({ max_concurrency: 8, per_root: 2 });
    expect(shown.config.approvals.allow_mcp).toBe(true);
  });

  it('unset removes a key or a named entry from the file (its default applies again), keeping the rest as written', async () => {
    const withGateway = `${HAND_WRITTEN}\n[gateways.local]   # my proxy\nbase_url = "http://127.0.0.1:8080/v1"\nkey_env = "LOCAL_KEY"\n`;
    const { home, config } = homeWith(withGateway);
    const r = await runCli(['settings', 'unset', 'scheduler.per_root'], { home });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(withGateway.replace('per_root = 2\n', ''));
    expect((await runCli(['settings', 'unset', 'gateways.local'], { home })).code).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(HAND_WRITTEN.replace('per_root = 2\n', ''));
    expect(JSON.parse((await runCli(['settings', '--json'], { home })).stdout).config.scheduler.per_root).toBe(2); // the default
  });

  it('refuses a model outside models.allow, an unknown key and a wrong type, naming the key and writing nothing', async () => {
    const { home, config } = homeWith(HAND_WRITTEN);
    for (const [key, value, named] of [
      ['models.fast', 'gpt-4-turbo', /models\.fast: "gpt-4-turbo" is not in models\.allow/],
      ['profiles.deep.model', 'claude-opus', /profiles\.deep\.model: "claude-opus" is not in models\.allow/],
      ['models.allow', '["gpt-5.5"]', /models\.fast: "gpt-5\.5-mini" is not in models\.allow/], // would strand the fast model
      ['models.per_worker.codex', '{ fast = "gpt-5.5-mini", reasoning = "o3" }', /models\.per_worker\.codex\.reasoning: "o3" is not in models\.allow/],
      ['scheduler.bogus', '1', /scheduler\.bogus: Unrecognized key/],
      ['scheduler.max_concurrency', 'many', /scheduler\.max_concurrency: .*expected number/],
    ] as const) {
      const r = await runCli(['settings', 'set', key, value], { home });
      expect(r.code, `${key}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(named);
      expect(r.stderr).not.toContain('update_settings');
      expect(readFileSync(config, 'utf8')).toBe(HAND_WRITTEN);
    }
  });

  it('narrowing models.allow to one vendor is not refused over the built-in claude-code pair the file never wrote', async () => {
    const { home, config } = homeWith(HAND_WRITTEN.replace('per_worker = {}\n', ''));
    const r = await runCli(['settings', 'set', 'models.allow', '["gpt-5.5", "gpt-5.5-mini"]'], { home });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(config, 'utf8')).toContain('allow = ["gpt-5.5", "gpt-5.5-mini"]\n');
    const doctor = JSON.parse((await runCli(['doctor', '--json'], { home })).stdout);
    expect(doctor.checks.find((c: { name: string }) => c.name === 'config').ok).toBe(true);
  }, 60_000);

  it('doctor fails a hand-edited file the settings would refuse, naming the key', async () => {
    const { home, config } = homeWith(HAND_WRITTEN);
    expect((await runCli(['doctor', '--json'], { home })).stdout).toMatch(/"name": "config",\s+"ok": true/);
    writeFileSync(config, HAND_WRITTEN.replace('fast = "gpt-5.5-mini"', 'fast = "gpt-4-turbo"'));
    const r = await runCli(['doctor', '--json'], { home });
    expect(r.code).toBe(1);
    const check = JSON.parse(r.stdout).checks.find((c: { name: string }) => c.name === 'config');
    expect(check).toMatchObject({ ok: false });
    expect(check.detail).toContain('models.fast: "gpt-4-turbo" is not in models.allow');
  }, 180_000); // two doctor runs, each probing every worker CLI: 25-35 s apiece on a loaded machine
});

describe('update_settings as the console calls it (every section sent back)', () => {
  it('saving unchanged settings leaves the file byte for byte; one changed field changes one line', async () => {
    const h = makeHome();
    try {
      h.configure(HAND_WRITTEN);
      const all = (await h.call('get_settings')).config;
      await h.call('update_settings', { settings: all });
      expect(readFileSync(h.engine.home.config, 'utf8')).toBe(HAND_WRITTEN);
      await h.call('update_settings', { settings: { ...all, scheduler: { ...all.scheduler, per_root: 3 } } });
      expect(readFileSync(h.engine.home.config, 'utf8')).toBe(HAND_WRITTEN.replace('per_root = 2', 'per_root = 3'));
      // A map section replaces its entries: a removed gateway goes, with nothing else touched.
      await h.call('update_settings', { settings: { gateways: { local: { base_url: 'http://127.0.0.1:9/v1', key_env: 'LOCAL_KEY' } } } });
      expect(readFileSync(h.engine.home.config, 'utf8')).toContain('[gateways.local]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "LOCAL_KEY"\n');
      await h.call('update_settings', { settings: { gateways: {} } });
      expect(readFileSync(h.engine.home.config, 'utf8')).toBe(HAND_WRITTEN.replace('per_root = 2', 'per_root = 3'));
    } finally {
      h.cleanup();
    }
  });
});

describe('update_settings refuses routing that names a profile that does not exist', () => {
  it('an unknown profile in routing.types or routing.escalation is refused at that key, and the file is untouched', async () => {
    const h = makeHome();
    try {
      h.configure(HAND_WRITTEN);
      await expect(h.call('update_settings', { settings: { routing: { types: { feature: 'speedy' } } } })).rejects.toMatchObject({
        code: 'invalid_input', message: expect.stringContaining('settings: routing.types.feature: unknown profile "speedy"'),
      });
      await expect(h.call('update_settings', { settings: { routing: { escalation: ['fast_worker', 'expert'] } } })).rejects.toMatchObject({
        message: expect.stringContaining('settings: routing.escalation.1: unknown profile "expert"'),
      });
      expect(readFileSync(h.engine.home.config, 'utf8')).toBe(HAND_WRITTEN);
      // Defined in the same save, it is known.
      await h.call('update_settings', { settings: { profiles: { expert: { reasoning_effort: 'xhigh' } }, routing: { escalation: ['fast_worker', 'expert'], types: { feature: 'expert' } } } });
      expect((await h.call('get_settings')).config.routing).toMatchObject({ escalation: ['fast_worker', 'expert'], types: { feature: 'expert' } });
    } finally {
      h.cleanup();
    }
  });
});

describe('a profile must name a worker this home knows', () => {
  it('update_settings and `settings set` refuse an unknown worker at profiles.NAME.worker, naming the known ones, and change nothing', async () => {
    const h = makeHome();
    try {
      h.configure(HAND_WRITTEN);
      await expect(h.call('update_settings', { settings: { profiles: { deep: { worker: 'codx', reasoning_effort: 'high' } } } })).rejects.toMatchObject({
        code: 'invalid_input',
        message: expect.stringMatching(/^settings: profiles\.deep\.worker: unknown worker "codx" \(known: mock, codex, claude-code, .*\)$/),
        details: { key: 'profiles.deep.worker' },
      });
      expect(readFileSync(h.engine.home.config, 'utf8')).toBe(HAND_WRITTEN);
      expect(h.engine.config.profiles.deep).toBeUndefined();
      // A built-in worker, and a linked CLI defined in the same save, are known ([profiles] is replaced whole).
      await h.call('update_settings', { settings: { profiles: { deep: { worker: 'codex' } } } });
      await h.call('update_settings', { settings: { workers: { mine: { command: ['node', 'agent.js', '{prompt_file}'] } }, profiles: { deep: { worker: 'codex' }, mine_p: { worker: 'mine' } } } });
      expect((await h.call('get_settings')).config.profiles).toMatchObject({ deep: { worker: 'codex' }, mine_p: { worker: 'mine' } });
    } finally {
      h.cleanup();
    }
  });

  it('the CLI exits 2 writing nothing, and doctor fails a hand-edited profile naming an unknown worker', async () => {
    const { home, config } = homeWith(HAND_WRITTEN);
    const r = await runCli(['settings', 'set', 'profiles.deep.worker', 'codx'], { home });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/profiles\.deep\.worker: unknown worker "codx" \(known: .*codex.*\)/);
    expect(readFileSync(config, 'utf8')).toBe(HAND_WRITTEN);
    writeFileSync(config, `${HAND_WRITTEN}\n[profiles.deep]\nworker = "codx"\n`);
    const d = await runCli(['doctor', '--json'], { home });
    expect(d.code).toBe(1);
    expect(JSON.parse(d.stdout).checks.find((c: { name: string }) => c.name === 'config')).toMatchObject({ ok: false, detail: expect.stringContaining('profiles.deep.worker: unknown worker "codx"') });
  }, 60_000);
});

describe('get_settings says whether each gateway key variable is set, never its value', () => {
  it('answers true for a set variable and false for a missing one, with no value anywhere', async () => {
    const h = makeHome();
    const name = `LW_TEST_GATEWAY_KEY_${process.pid}`;
    process.env[name] = 'sk-test-value-that-must-not-leak-0123456789';
    try {
      await h.call('update_settings', { settings: { gateways: { a: { base_url: 'http://127.0.0.1:9/v1', key_env: name }, b: { base_url: 'http://127.0.0.1:9/v1', key_env: 'LW_TEST_UNSET_KEY' } } } });
      const r = await h.call('get_settings');
      expect(r.keyEnvSet).toEqual({ [name]: true, LW_TEST_UNSET_KEY: false });
      expect(JSON.stringify(r)).not.toContain('sk-test-value');
    } finally {
      delete process.env[name];
      h.cleanup();
    }
  });
});

describe('a running process reloads config.toml', () => {
  it('`run` applies a raised limit at once, and keeps its config (logging config.invalid) when the file breaks', async () => {
    const { home, config } = homeWith('[scheduler]\nmax_concurrency = 1\n');
    const ids: string[] = [];
    for (const i of [1, 2]) {
      const r = await runCli(['submit', '-w', repo, '--kind', 'explore', '--json', '--metadata', JSON.stringify({ mock: { sleep_ms: 60_000 } }), `long ${i}`], { home });
      ids.push(JSON.parse(r.stdout).task.id);
    }
    const runner = startCli(['run', '--quiet'], { home });
    children.push(runner);
    const running = async () => JSON.parse((await runCli(['tasks', '--status', 'running', '--json'], { home })).stdout).tasks.length as number;
    await until(async () => (await running()) === 1, 30_000, 'one task to run under max_concurrency = 1');
    await new Promise((r) => setTimeout(r, 1500));
    expect(await running()).toBe(1); // the limit holds

    // A broken file is refused: the event says so and the old limit stays.
    writeFileSync(config, '[scheduler]\nmax_concurrency = "two"\n');
    // (The CLI itself refuses to open a home with a broken config.toml, so look with a pinned config.)
    const observer = new Engine({ home, config: defaultConfig() });
    try {
      const invalid = () => listEvents(observer.db, { after: 0, limit: 5000, types: ['config.invalid'] }).events;
      await until(() => invalid().length > 0, 30_000, 'config.invalid');
      expect(invalid()[0].payload.error).toContain('scheduler.max_concurrency');
      await new Promise((r) => setTimeout(r, 1000));
      expect(listTasks(observer.db, { status: ['running'], limit: 10 })).toHaveLength(1);
    } finally {
      observer.close();
    }

    // The settings command (another process) raises the limit: the runner starts the second task.
    writeFileSync(config, '[scheduler]\nmax_concurrency = 1\n');
    const set = await runCli(['settings', 'set', 'scheduler.max_concurrency', '2'], { home });
    expect(set.code, set.stderr).toBe(0);
    await until(async () => (await running()) === 2, 30_000, 'the second task to start after the reload');
    await runCli(['cancel', ...ids], { home });
    runner.kill('SIGTERM');
    expect(await exited(runner)).toBe(0);
  }, 90_000);

  it('`serve` answers with the new settings after another process changes config.toml', async () => {
    const { home } = homeWith(HAND_WRITTEN);
    const serve = startCli(['serve', '--port', '0', '--no-open'], { home });
    children.push(serve);
    let text = '';
    serve.stdout!.on('data', (d) => (text += String(d)));
    serve.stderr!.on('data', (d) => (text += String(d)));
    await until(() => /LightWorker console: http:\/\/\S+/.test(text), 60_000, 'serve to print its URL');
    const url = new URL(/LightWorker console: (http:\/\/\S+)/.exec(text)![1]);
    const settings = async () => {
      const res = await fetch(new URL('api/commands/get_settings', url.origin + '/'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${url.searchParams.get('token')}` },
        body: '{}',
      });
      const body = await res.json();
      return (body.data ?? body).config;
    };
    expect((await settings()).scheduler.max_concurrency).toBe(4);
    expect((await runCli(['settings', 'set', 'scheduler.max_concurrency', '6'], { home })).code).toBe(0);
    await until(async () => (await settings()).scheduler.max_concurrency === 6, 30_000, 'serve to reload config.toml');
    serve.kill('SIGTERM');
    await exited(serve);
  }, 90_000);
});
