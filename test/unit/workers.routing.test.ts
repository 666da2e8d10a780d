import { describe, expect, it } from 'vitest';
import { defaultConfig, parseConfig } from '../../main/core/config.js';
import { resolveRoute } from '../../main/workers/routing.js';

const task = (over: Record<string, unknown> = {}) => ({ kind: 'execute' as const, worker: 'codex', model: null, reasoningEffort: null, profile: null, gateway: null, ...over });

describe('resolveRoute', () => {
  const config = defaultConfig();

  it('routes low effort to the fast model and every other effort to the reasoning model', () => {
    expect(resolveRoute(config, task({ reasoningEffort: 'low' })).model).toBe('gpt-5.5-mini');
    for (const e of ['medium', 'high', 'xhigh']) expect(resolveRoute(config, task({ reasoningEffort: e })).model).toBe('gpt-5.5');
    expect(resolveRoute(config, task()).reasoningEffort).toBe('medium');
  });

  it('uses the per-worker pair for claude-code and no model for the mock worker', () => {
    expect(resolveRoute(config, task({ worker: 'claude-code', reasoningEffort: 'low' })).model).toBe('claude-haiku-4-5');
    expect(resolveRoute(config, task({ worker: 'claude-code' })).model).toBe('claude-sonnet-4-5');
    expect(resolveRoute(config, task({ worker: 'mock' })).model).toBeNull();
  });

  it('refuses a model outside the allow-list, naming the field', () => {
    expect(() => resolveRoute(config, task({ model: 'gpt-9-ultra' }))).toThrow(/model: "gpt-9-ultra" is not in models.allow/);
  });

  it('applies built-in and configured profiles, and their allowed kinds', () => {
    expect(resolveRoute(config, task({ profile: 'deep_worker' }))).toMatchObject({ model: 'gpt-5.5', reasoningEffort: 'high' });
    expect(resolveRoute(config, task({ profile: 'fast_worker' }))).toMatchObject({ model: 'gpt-5.5-mini', reasoningEffort: 'low' });
    expect(() => resolveRoute(config, task({ profile: 'planner' }))).toThrow(/profile "planner" does not run execute tasks/);
    expect(() => resolveRoute(config, task({ profile: 'nope' }))).toThrow(/unknown profile "nope"/);
    const custom = parseConfig({ profiles: { planner: { model: 'claude-sonnet-4-5', reasoning_effort: 'xhigh', kinds: ['plan', 'execute'] } } });
    expect(resolveRoute(custom, task({ profile: 'planner' }))).toMatchObject({ model: 'claude-sonnet-4-5', reasoningEffort: 'xhigh' });
    // An explicit effort on the task wins over the profile's.
    expect(resolveRoute(config, task({ profile: 'deep_worker', reasoningEffort: 'low' }))).toMatchObject({ reasoningEffort: 'low', model: 'gpt-5.5-mini' });
  });

  it('resolves a gateway with its key read from the environment, never from config', () => {
    const cfg = parseConfig({ gateways: { fake: { base_url: 'http://127.0.0.1:9/v1', key_env: 'FAKE_KEY' } } });
    expect(resolveRoute(cfg, task({ gateway: 'fake' }), { FAKE_KEY: 's3cret' }).gateway).toEqual({ name: 'fake', baseUrl: 'http://127.0.0.1:9/v1', keyEnv: 'FAKE_KEY', key: 's3cret', wireApi: undefined, authStyle: undefined, modelMap: {} });
    expect(resolveRoute(cfg, task({ gateway: 'fake' }), {}).gateway?.key).toBeNull();
    expect(() => resolveRoute(cfg, task({ gateway: 'other' }))).toThrow(/gateway: unknown gateway "other"/);
    expect(() => parseConfig({ gateways: { bad: { base_url: 'http://x/v1', key: 'abc', key_env: 'K' } } })).toThrow(/gateways\.bad\.key/);
  });
});
