import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

// `lightworker gateways add zcode-glm`: an Anthropic-compatible endpoint that takes a Bearer token and
// its own model names, used by a real Claude Code task end to end (the scripted gateway stands in).

const KEY = 'sk-zai-test-0123456789abcdef';

describe('gateways add zcode-glm', () => {
  let h: TestHome;
  let gw: Gateway;
  beforeAll(async () => {
    h = makeHome();
    gw = await startGateway({ keys: { zai: KEY }, script: { turns: [{ text: 'Answered by GLM.' }] } });
  });
  afterAll(async () => {
    await gw?.close();
    h?.cleanup();
  });

  it('appends a valid block (keeping the file), and refuses a duplicate or unknown preset changing nothing', { timeout: 60_000 }, async () => {
    writeFileSync(h.engine.home.config, '# my settings\n[scheduler]\nmax_concurrency = 3\n');
    const r = await runCli(['gateways', 'add', 'zcode-glm', '--base-url', gw.url, '--json'], { home: h.home });
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(h.engine.home.config, 'utf8');
    expect(text.startsWith('# my settings\n[scheduler]\nmax_concurrency = 3\n')).toBe(true);
    expect(text).toContain('[gateways."zcode-glm"]');
    expect(text).toContain('auth = "bearer"');
    expect(text).toContain('"claude-sonnet-4-5" = "glm-4.6"');
    expect(text).not.toContain(KEY);
    for (const args of [['gateways', 'add', 'zcode-glm'], ['gateways', 'add', 'no-such-preset']]) {
      const bad = await runCli(args, { home: h.home });
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/already exists|unknown gateway preset/);
      expect(readFileSync(h.engine.home.config, 'utf8')).toBe(text);
    }
  });

  it('a Claude Code task through it sends the key as Bearer and the GLM model name; show records the route', { timeout: 180_000 }, async (ctx) => {
    if (await cliUnavailable('claude')) ctx.skip();
    const env = { ZAI_API_KEY: KEY };
    const sub = await runCli(['submit', 'Say hello', '--kind', 'explore', '--workspace', h.repo, '--worker', 'claude-code', '--gateway', 'zcode-glm', '--model', 'claude-sonnet-4-5', '--json'], { home: h.home, env });
    expect(sub.code, sub.stderr).toBe(0);
    const id = JSON.parse(sub.stdout).task.id as string;
    const ran = await runCli(['run', '--until-idle', '--timeout', '150'], { home: h.home, env, timeoutMs: 170_000 });
    const shown = JSON.parse((await runCli(['show', id, '--json'], { home: h.home })).stdout);
    expect(shown.task.status, ran.stderr + JSON.stringify(shown.task.error)).toBe('completed');
    expect(shown.route).toMatchObject({ gateway: 'zcode-glm', host: `127.0.0.1:${gw.port}`, authStyle: 'bearer', model: 'claude-sonnet-4-5', providerModel: 'glm-4.6', credential: 'gateway zcode-glm (ZAI_API_KEY)' });
    const model = gw.requests.filter((r) => r.api);
    expect(model.length).toBeGreaterThan(0);
    for (const r of model) {
      expect(r.credential).toEqual({ header: 'bearer', key: 'zai' });
      expect(r.summary!.model).toBe('glm-4.6');
    }
  });
});
