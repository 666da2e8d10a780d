import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../main/core/config.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * The seed's `response_mode` on a gateway (how it answers) is read as our `wire_api`; and `settings` and
 * `doctor` say the route each profile's, routed model's and other task will take before any runs.
 */
const gateway = (extra: Record<string, unknown>) => ({ gateways: { a: { base_url: 'http://127.0.0.1:9/v1', key_env: 'K', ...extra } } });

let h: TestHome | null = null;
afterEach(() => {
  h?.cleanup();
  h = null;
});

describe('response_mode', () => {
  it('is read as wire_api: responses, chat / chat_completions, messages / anthropic', () => {
    const wire = (mode: string) => parseConfig(gateway({ response_mode: mode })).gateways.a.wire_api;
    expect(['responses', 'chat', 'chat_completions', 'messages', 'anthropic'].map(wire)).toEqual(['responses', 'chat', 'chat', 'messages', 'messages']);
    expect(parseConfig(gateway({ response_mode: 'anthropic', wire_api: 'messages' })).gateways.a).toMatchObject({ wire_api: 'messages' });
    expect(parseConfig(gateway({})).gateways.a.wire_api).toBeUndefined();
  });

  it('refuses an unknown value naming the key and the accepted ones, and a disagreeing wire_api naming both', () => {
    expect(() => parseConfig(gateway({ response_mode: 'xml' }))).toThrow(
      'config.toml: gateways.a.response_mode: unknown response_mode "xml" (accepted: responses, chat, chat_completions, messages, anthropic)',
    );
    expect(() => parseConfig(gateway({ response_mode: 'toString' }))).toThrow(/unknown response_mode "toString"/);
    expect(() => parseConfig(gateway({ response_mode: 'chat', wire_api: 'responses' }))).toThrow(
      'config.toml: gateways.a.response_mode: response_mode "chat" means wire_api "chat", but wire_api is "responses": keep one of response_mode and wire_api',
    );
  });

  it('a refused value set from the CLI changes nothing in config.toml', async () => {
    h = makeHome();
    h.configure('[gateways.a]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "K"\n');
    const before = readFileSync(h.engine.home.config, 'utf8');
    const r = await runCli(['settings', 'set', 'gateways.a.response_mode', 'xml'], { home: h.home });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/gateways\.a\.response_mode: unknown response_mode "xml" \(accepted: /);
    expect(readFileSync(h.engine.home.config, 'utf8')).toBe(before);
  });
});

describe('the route each task will take, before it runs', () => {
  it('settings and doctor name the gateway, the provider model and the wire protocol of each profile, routed model and the rest', async () => {
    h = makeHome();
    h.configure(
      [
        '[gateways.a]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "K_A"\nresponse_mode = "responses"',
        '[gateways.b]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "K_B"\nresponse_mode = "anthropic"\nmodel_map = { "claude-sonnet-4-5" = "glm-4.6" }',
        '[routing]\ndefault_gateway = "a"',
        '[profiles.quick]\nreasoning_effort = "low"\nmodel = "gpt-5.5-mini"\nworker = "codex"\ngateway = "a"',
        '[profiles.careful]\nmodel = "claude-sonnet-4-5"\nworker = "claude-code"\ngateway = "b"',
        '[profiles.odd]\nmodel = "gpt-5.5"\nworker = "codex"\ngateway = "b"',
        '[models.routes."gpt-5.5"]\nprimary = { gateway = "a", model = "provider-a/gpt-5.5" }\nfallback = { gateway = "b", model = "provider-b/gpt-5.5" }',
      ].join('\n'),
    );
    const lines = [
      'profile quick: codex, gpt-5.5-mini → gateway a as gpt-5.5-mini (responses)',
      'profile careful: claude-code, claude-sonnet-4-5 → gateway b as glm-4.6 (messages)',
      'profile odd: codex, gpt-5.5 → gateway b as provider-b/gpt-5.5 (messages); fallback gateway a as provider-a/gpt-5.5 (responses) — codex speaks responses, gateway b answers messages',
      'model gpt-5.5: gpt-5.5 → gateway a as provider-a/gpt-5.5 (responses); fallback gateway b as provider-b/gpt-5.5 (messages)',
      'any other task: gateway a (responses)',
    ];
    const shown = await runCli(['settings'], { home: h.home });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(['# Routes, as tasks will take them:', ...lines.map((l) => `#   ${l}`)].join('\n'));
    // The seed's key is read as ours: the settings in force say wire_api.
    expect((await h.call('get_settings')).config.gateways.b).toMatchObject({ wire_api: 'messages' });

    const checks = (await h.call('run_doctor')).checks as { name: string; ok: boolean; detail: string }[];
    const routes = checks.filter((c) => c.name.startsWith('route '));
    expect(routes.map((c) => `${c.name.slice(6)}: ${c.detail}`)).toEqual(lines);
    expect(routes.find((c) => c.name === 'route profile odd')!.ok).toBe(false);
    expect(routes.filter((c) => c.ok).length).toBe(4);
  });
});

describe('plan_route: the route one task will take, before it is submitted', () => {
  const config = [
    '[gateways.a]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "K_A"\nresponse_mode = "responses"',
    '[gateways.b]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "K_B"\nresponse_mode = "anthropic"',
    '[models]\nallow = ["gpt-5.5", "claude-sonnet-4-5"]',
    '[profiles.deep]\nmodel = "claude-sonnet-4-5"\nworker = "claude-code"\ngateway = "b"',
    '[models.routes."claude-sonnet-4-5"]\nprimary = { gateway = "b", model = "provider-b/sonnet" }\nfallback = { gateway = "a", model = "provider-a/sonnet" }',
  ].join('\n');

  it('names the gateway, the provider model and the fallback as delegate_task then records them', async () => {
    h = makeHome();
    h.configure(config);
    const { route } = await h.call('plan_route', { worker: 'claude-code', model: 'claude-sonnet-4-5' });
    expect(route).toMatchObject({
      worker: 'claude-code', model: 'claude-sonnet-4-5',
      via: { gateway: 'b', upstream: 'provider-b/sonnet', wire: 'messages' },
      fallback: { gateway: 'a', upstream: 'provider-a/sonnet', wire: 'responses' },
      problem: 'claude-code speaks messages, gateway a answers responses',
    });
    const task = (await h.call('delegate_task', { objective: 'x', workspace: h.repo, worker: 'claude-code', model: 'claude-sonnet-4-5' })).task;
    expect(task.gateway).toBe(route.via.gateway);
    // A profile picks the worker, the model and the gateway; no gateway anywhere: the worker's own login.
    expect((await h.call('plan_route', { profile: 'deep' })).route).toMatchObject({ worker: 'claude-code', profile: 'deep', via: { gateway: 'b' } });
    expect((await h.call('plan_route', { worker: 'mock' })).route).toMatchObject({ worker: 'mock', via: null, fallback: null });
  });

  it('refuses what delegate_task refuses, with the same words', async () => {
    h = makeHome();
    h.configure(config);
    await expect(h.call('plan_route', { profile: 'nope' })).rejects.toThrow('unknown profile "nope"');
    await expect(h.call('plan_route', { model: 'gpt-4' })).rejects.toThrow('"gpt-4" is not in models.allow');
    await expect(h.call('plan_route', { gateway: 'zz' })).rejects.toThrow('unknown gateway "zz"');
  });
});

describe('a Save of the gateways as a form sends them back', () => {
  it('keeps a response_mode the form shows as wire_api; a wire_api it changes replaces it', async () => {
    h = makeHome();
    h.configure('[gateways.a]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "K"\nresponse_mode = "anthropic"\n');
    const back = { a: { base_url: 'http://127.0.0.1:9/v1', key_env: 'K', model_map: {}, wire_api: 'messages' } };
    expect((await h.call('update_settings', { settings: { gateways: back } })).config.gateways.a.wire_api).toBe('messages');
    expect(readFileSync(h.engine.home.config, 'utf8')).toContain('response_mode = "anthropic"');
    const changed = { a: { ...back.a, wire_api: 'chat' } };
    expect((await h.call('update_settings', { settings: { gateways: changed } })).config.gateways.a.wire_api).toBe('chat');
    expect(readFileSync(h.engine.home.config, 'utf8')).not.toContain('response_mode');
  });
});
