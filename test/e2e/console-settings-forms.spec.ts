/// <reference lib="dom" />
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

// Gateways, profiles and routing as forms: what a person fills in is what get_settings shows after a
// reload, and a bad value is refused at its own field with nothing written.

const field = (page: Page, name: string) => page.locator(`[name="${name}"]`);
const save = async (page: Page) => {
  const button = page.locator('button[data-action=save-settings]');
  await button.scrollIntoViewIfNeeded();
  await button.click();
};

let original: any;
test.beforeAll(async ({ lw }) => {
  original = (await lw.call('get_settings')).config;
});
// Another spec on this server may have narrowed the allowed models: start from the documented defaults.
test.beforeEach(async ({ lw }) => {
  await lw.call('update_settings', {
    settings: {
      models: { allow: ['gpt-5.5', 'gpt-5.5-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'mock-model'], fast: 'gpt-5.5-mini', reasoning: 'gpt-5.5', per_worker: { 'claude-code': { fast: 'claude-haiku-4-5', reasoning: 'claude-sonnet-4-5' } }, routes: {} },
      profiles: {}, gateways: {},
      routing: { types: { chore: 'cheapest' }, escalation: ['fast_worker', 'deep_worker'], default_gateway: null },
    },
  });
});
// The server is shared with other specs: leave config.toml as it was. Null removes what these tests wrote
// (the defaults apply again); sending the original back then writes only what differed from a default.
test.afterEach(async ({ lw }) => {
  const c = original;
  await lw.call('update_settings', {
    settings: {
      models: { allow: null, fast: null, reasoning: null, per_worker: null, routes: null },
      profiles: {}, gateways: {},
      routing: { types: null, escalation: null, default_gateway: null },
    },
  });
  await lw.call('update_settings', {
    settings: {
      models: { allow: c.models.allow, fast: c.models.fast, reasoning: c.models.reasoning, per_worker: c.models.per_worker, routes: c.models.routes },
      profiles: c.profiles, gateways: c.gateways,
      routing: { types: c.routing.types, escalation: c.routing.escalation, ...(c.routing.default_gateway ? { default_gateway: c.routing.default_gateway } : {}) },
    },
  });
  expect((await lw.call('get_settings')).config).toEqual(c);
});

async function fillRouting(page: Page): Promise<void> {
  await page.locator('button[data-action=add-gateway]').click();
  await field(page, 'gateways.new1.name').fill('fastgw');
  await field(page, 'gateways.fastgw.base_url').fill('http://127.0.0.1:4100/v1');
  await field(page, 'gateways.fastgw.key_env').fill('FAST_GATEWAY_KEY');
  await field(page, 'gateways.fastgw.auth').selectOption('bearer');
  await page.locator('button[data-action=add-gateway]').click();
  await field(page, 'gateways.new2.name').fill('deepgw');
  await field(page, 'gateways.deepgw.base_url').fill('https://deep.example/v1');
  await field(page, 'gateways.deepgw.key_env').fill('DEEP_GATEWAY_KEY');
  await field(page, 'gateways.deepgw.model_map').fill('gpt-5.5 = glm-4.6');

  await page.locator('button[data-action=add-profile]').click();
  await field(page, 'profiles.new1.name').fill('quick');
  await field(page, 'profiles.quick.model').selectOption('gpt-5.5-mini');
  await field(page, 'profiles.quick.reasoning_effort').selectOption('low');
  await field(page, 'profiles.quick.gateway').selectOption('fastgw');
  await field(page, 'profiles.quick.cost').fill('5');

  await field(page, 'routing.types.feature').selectOption('quick');
  await field(page, 'routing.escalation').selectOption('quick');
  await field(page, 'routing.default_gateway').selectOption('deepgw');
  await page.locator('button[data-action=add-route]').click();
  await field(page, 'models.routes.new1.model').selectOption('gpt-5.5');
  await field(page, 'models.routes.gpt-5.5.primary.gateway').selectOption('deepgw');
  await field(page, 'models.routes.gpt-5.5.primary.model').fill('glm-4.6');
  await field(page, 'models.routes.gpt-5.5.fallback.gateway').selectOption('fastgw');
  await page.locator('button[data-action=add-pair]').click();
  await field(page, 'models.per_worker.new2.worker').fill('codex');
  await field(page, 'models.per_worker.codex.fast').selectOption('gpt-5.5-mini');
  await field(page, 'models.per_worker.codex.reasoning').selectOption('gpt-5.5');
}

test('gateways, profiles and routing filled as forms survive a reload and are what the engine holds', async ({ page, lw, shot }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${lw.url}#/settings`);
  await expect(page.getByTestId('gateways')).toBeVisible();
  // No raw JSON boxes: every routing setting is a field of its own.
  await expect(page.locator('textarea[name=profiles], textarea[name=gateways]')).toHaveCount(0);
  await fillRouting(page);
  await save(page);
  await expect(page.getByText('Settings saved')).toBeVisible();

  const c = (await lw.call('get_settings')).config;
  expect(c.gateways).toEqual({
    fastgw: { base_url: 'http://127.0.0.1:4100/v1', key_env: 'FAST_GATEWAY_KEY', auth: 'bearer', model_map: {} },
    deepgw: { base_url: 'https://deep.example/v1', key_env: 'DEEP_GATEWAY_KEY', model_map: { 'gpt-5.5': 'glm-4.6' } },
  });
  expect(c.profiles.quick).toEqual({ model: 'gpt-5.5-mini', reasoning_effort: 'low', kinds: ['plan', 'explore', 'review', 'execute'], gateway: 'fastgw', cost: 5 });
  expect(c.routing).toEqual({ types: { chore: 'cheapest', feature: 'quick' }, escalation: ['quick', 'deep_worker'], default_gateway: 'deepgw' });
  expect(c.models.routes).toEqual({ 'gpt-5.5': { primary: { gateway: 'deepgw', model: 'glm-4.6' }, fallback: { gateway: 'fastgw' } } });
  expect(c.models.per_worker.codex).toEqual({ fast: 'gpt-5.5-mini', reasoning: 'gpt-5.5' });
  expect(c.models.per_worker['claude-code']).toEqual({ fast: 'claude-haiku-4-5', reasoning: 'claude-sonnet-4-5' });

  await page.reload();
  await expect(field(page, 'gateways.fastgw.base_url')).toHaveValue('http://127.0.0.1:4100/v1');
  await expect(field(page, 'gateways.fastgw.key_env')).toHaveValue('FAST_GATEWAY_KEY');
  // Whether the variable is set where LightWorker runs is said (never its value): here it is not.
  await expect(page.locator('[data-gateway=fastgw] [data-testid=key-state]')).toHaveText('not set where LightWorker runs: export FAST_GATEWAY_KEY');
  await expect(field(page, 'profiles.quick.gateway')).toHaveValue('fastgw');
  await expect(field(page, 'routing.types.feature')).toHaveValue('quick');
  await expect(field(page, 'routing.default_gateway')).toHaveValue('deepgw');
  await expect(field(page, 'models.routes.gpt-5.5.primary.model')).toHaveValue('glm-4.6');
  await expect(field(page, 'models.per_worker.codex.fast')).toHaveValue('gpt-5.5-mini');
  // The read-only TOML view shows what was saved; the key's variable is named, no key is anywhere.
  await page.getByTestId('as-toml').locator('summary').click();
  await expect(page.getByTestId('as-toml')).toContainText('[gateways.fastgw]');
  await expect(page.getByTestId('as-toml')).toContainText('key_env = "FAST_GATEWAY_KEY"');
  await page.getByTestId('as-toml').locator('summary').click();
  await page.getByTestId('gateways').scrollIntoViewIfNeeded();
  await shootEverySize(page, shot, 'settings-forms');

  // Removing a route and clearing the default gateway writes that too.
  await page.locator('button[aria-label="remove route gpt-5.5"]').click();
  await field(page, 'routing.default_gateway').selectOption('');
  await save(page);
  await expect(page.getByText('Settings saved').last()).toBeVisible();
  await expect.poll(async () => (await lw.call('get_settings')).config.models.routes).toEqual({});
  expect((await lw.call('get_settings')).config.routing.default_gateway).toBeUndefined();
});

/** Save, and expect `text` beside Save and at the field `name`, focused and in view, with nothing written. */
async function expectRefusedAt(page: Page, lw: { call: (n: string) => Promise<any> }, name: string, text: string): Promise<void> {
  const before = JSON.stringify((await lw.call('get_settings')).config);
  await save(page);
  await expect(page.getByTestId('save-error')).toContainText(text);
  const el = field(page, name);
  await expect(el).toHaveAttribute('aria-invalid', 'true');
  await expect(el).toBeFocused();
  await expect(el).toBeInViewport();
  expect(await el.evaluate((e) => e.closest('label')?.dataset.error ?? '')).toContain(text);
  expect(JSON.stringify((await lw.call('get_settings')).config)).toBe(before);
}

test('a bad gateway, profile or route is refused at its field and nothing changes', async ({ page, lw, shot }) => {
  await page.setViewportSize({ width: 800, height: 700 });
  await page.goto(`${lw.url}#/settings`);
  await fillRouting(page);

  // Checked in the page: a URL that is not one, a key given where its variable's name belongs.
  await field(page, 'gateways.fastgw.base_url').fill('127.0.0.1:4100');
  await expectRefusedAt(page, lw, 'gateways.fastgw.base_url', '"127.0.0.1:4100" is not an http(s) URL');
  await shootEverySize(page, shot, 'settings-forms-refused');
  await field(page, 'gateways.fastgw.base_url').fill('http://127.0.0.1:4100/v1');
  await field(page, 'gateways.fastgw.key_env').fill('sk-live-abc123');
  await expectRefusedAt(page, lw, 'gateways.fastgw.key_env', 'is not an environment variable name');
  await field(page, 'gateways.fastgw.key_env').fill('FAST_GATEWAY_KEY');

  // A gateway removed while a profile still goes through it, and a profile routing names that is gone.
  await page.locator('button[aria-label="remove gateway fastgw"]').click();
  await expectRefusedAt(page, lw, 'profiles.quick.gateway', 'unknown gateway "fastgw"');
  await field(page, 'profiles.quick.gateway').selectOption('deepgw');
  await field(page, 'models.routes.gpt-5.5.fallback.gateway').selectOption('');
  // The worker names come from list_workers (it probes the CLIs, so it may answer after the page is up).
  await expect(page.locator('#settings-workers option[value=mock]')).toBeAttached();
  await field(page, 'profiles.quick.worker').fill('no-such-worker');
  await expectRefusedAt(page, lw, 'profiles.quick.worker', 'unknown worker "no-such-worker"');
  await field(page, 'profiles.quick.worker').fill('');
  await field(page, 'profiles.quick.name').fill('');
  await expectRefusedAt(page, lw, 'profiles.new1.name', 'give the profile a name');
  await field(page, 'profiles.new1.name').fill('speedy');
  await expectRefusedAt(page, lw, 'routing.types.feature', 'unknown profile "quick"');
  await field(page, 'routing.types.feature').selectOption('speedy');
  await expectRefusedAt(page, lw, 'routing.escalation', 'unknown profile "quick"');
  await field(page, 'routing.escalation').selectOption('speedy');

  // Refused by the engine: a model the per-worker pair uses is taken off the allowed list.
  const allow = page.locator('textarea[name="models.allow"]');
  await allow.fill((await allow.inputValue()).replace('claude-haiku-4-5\n', ''));
  await expectRefusedAt(page, lw, 'models.per_worker.claude-code.fast', '"claude-haiku-4-5" is not in models.allow');

  // Fixed, it saves.
  await field(page, 'models.per_worker.claude-code.fast').selectOption('claude-sonnet-4-5');
  await save(page);
  await expect(page.getByText('Settings saved')).toBeVisible();
  const c = (await lw.call('get_settings')).config;
  expect(Object.keys(c.gateways)).toEqual(['deepgw']);
  expect(c.profiles.speedy).toMatchObject({ model: 'gpt-5.5-mini', gateway: 'deepgw' });
  expect(c.models.allow).not.toContain('claude-haiku-4-5');
  expect(c.models.per_worker['claude-code'].fast).toBe('claude-sonnet-4-5');
});
