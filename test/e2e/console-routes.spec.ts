/// <reference lib="dom" />
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { ROOT } from './console-server.js';
import { shootEverySize } from './page-helpers.js';

// Routing by profile, as a person sees it before anything runs: Settings lists the route every profile,
// routed model and other task takes (with doctor's warning beside a route its worker cannot speak), the New
// form says where the task it is about to queue goes, and the task page names the gateway and the provider's
// model, and the reroute when a rate limit moved it. Codex is the scripted stand-in whose first run meets a
// provider 429 naming a reset ten minutes away, so its task moves to its model's fallback route.

const SCRIPTED = join(ROOT, 'test', 'fixtures', 'guards', 'scripted-codex.mjs');
const field = (page: Page, name: string) => page.locator(`[name="${name}"]`);
const row = (page: Page, subject: string) => page.locator(`tr[data-route="${subject}"]`);

let original: any;
let state: string;
test.beforeAll(async ({ lw }) => {
  original = (await lw.call('get_settings')).config;
});
test.beforeEach(async ({ lw }) => {
  state = mkdtempSync(join(tmpdir(), 'lw-e2e-routes-'));
  const gw = (name: string) => ({ base_url: `http://127.0.0.1:9/${name}/v1`, key_env: `LW_E2E_ROUTES_${name.toUpperCase()}_KEY`, response_mode: 'responses' });
  await lw.call('update_settings', {
    settings: {
      models: { allow: ['gpt-5.5', 'gpt-5.5-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'mock-model'], routes: { 'gpt-5.5': { primary: { gateway: 'rta', model: 'provider-a/gpt-5.5' }, fallback: { gateway: 'rtb', model: 'provider-b/gpt-5.5' } } } },
      gateways: { rta: gw('rta'), rtb: gw('rtb') },
      profiles: {
        deep: { worker: 'codex', model: 'gpt-5.5', reasoning_effort: 'high' },
        careful: { worker: 'claude-code', model: 'claude-sonnet-4-5', gateway: 'rtb' },
      },
      routing: { default_gateway: null },
      workers: { codex: { command: ['node', SCRIPTED, 'limited', join(state, 'limited'), '1', '600'], auth: 'none' } },
    },
  });
});
// The server is shared with other specs: leave config.toml as it was.
test.afterEach(async ({ lw }) => {
  const c = original;
  await lw.call('update_settings', {
    settings: { models: { allow: null, routes: null }, gateways: {}, profiles: {}, workers: {}, routing: { default_gateway: null } },
  });
  await lw.call('update_settings', {
    settings: {
      models: { allow: c.models.allow, routes: c.models.routes }, gateways: c.gateways, profiles: c.profiles, workers: c.workers,
      routing: { ...(c.routing.default_gateway ? { default_gateway: c.routing.default_gateway } : {}) },
    },
  });
  rmSync(state, { recursive: true, force: true });
});

test('Settings lists the routes tasks will take, warns beside one its worker cannot speak, and follows a Save', async ({ page, lw, shot }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${lw.url}#/settings`);
  const routes = page.getByTestId('routes');
  await expect(routes.locator('h2')).toHaveText('Routes');
  await expect(row(page, 'profile deep')).toHaveText(
    ['deep (profile)', 'codex, gpt-5.5', 'via gateway rta as provider-a/gpt-5.5, Responses API', 'if rta is rate limited: gateway rtb as provider-b/gpt-5.5, Responses API'].join(''),
  );
  await expect(row(page, 'model gpt-5.5')).toContainText('gpt-5.5 (routed model)');
  await expect(row(page, 'model gpt-5.5')).toContainText('via gateway rta as provider-a/gpt-5.5, Responses API');
  await expect(row(page, 'any other task')).toContainText("no gateway: the worker's own login");
  // Claude Code speaks the Messages API; gateway rtb answers the Responses API: doctor's warning, beside its row.
  await expect(page.locator('tr[data-route-warning="profile careful"]')).toHaveText(
    '⚠ doctor: claude-code speaks messages, gateway rtb answers responses — give gateway rtb the wire_api its worker speaks, or route this to another gateway',
  );
  await expect(page.locator('tr[data-route-warning]')).toHaveCount(1);
  // Doctor says the same of the same route.
  const checks = (await lw.call('run_doctor')).checks as { name: string; ok: boolean }[];
  expect(checks.filter((c) => c.name.startsWith('route ') && !c.ok).map((c) => c.name)).toEqual(['route profile careful']);

  // A default gateway chosen in the form, saved: every other task now goes through it.
  await field(page, 'routing.default_gateway').selectOption('rtb');
  const save = page.locator('button[data-action=save-settings]');
  await save.scrollIntoViewIfNeeded();
  await save.click();
  await expect(page.getByText('Settings saved')).toBeVisible();
  await expect(row(page, 'any other task')).toContainText('via gateway rtb, Responses API');
  await routes.scrollIntoViewIfNeeded();
  await shootEverySize(page, shot, 'settings-routes');
});

test('the New form says where the task goes as the model changes; the task page names the route and the reroute', async ({ page, lw, shot }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${lw.url}#/new`);
  const form = page.locator('form[aria-label="single task"]');
  await form.locator('[name=objective]').fill('Survey the README');
  await form.locator('[name=workspace]').fill(lw.repo);
  await form.locator('[name=worker]').selectOption('codex');
  const preview = page.getByTestId('route-preview-text');
  // Codex's reasoning model by effort routing (gpt-5.5) has a route of its own.
  await form.locator('[name=model]').selectOption('gpt-5.5-mini');
  await expect(preview).toHaveText("codex, gpt-5.5-mini: no gateway: the worker's own login");
  await form.locator('[name=model]').selectOption('gpt-5.5');
  await expect(preview).toHaveText('codex, gpt-5.5 will run via gateway rta as provider-a/gpt-5.5 (Responses API); if rta is rate limited: gateway rtb as provider-b/gpt-5.5 (Responses API)');
  // A profile that names another worker routes that worker's way, warning what doctor warns.
  await form.locator('[name=worker]').selectOption('');
  await form.locator('[name=model]').selectOption('');
  await form.locator('[name=profile]').selectOption('careful');
  await expect(preview).toHaveText('claude-code, claude-sonnet-4-5 will run via gateway rtb as claude-sonnet-4-5 (Responses API)');
  await expect(page.getByTestId('route-preview-problem')).toContainText('claude-code speaks messages, gateway rtb answers responses');
  await form.locator('[name=profile]').selectOption('');
  await form.locator('[name=worker]').selectOption('codex');
  await form.locator('[name=model]').selectOption('gpt-5.5');
  await expect(preview).toContainText('will run via gateway rta as provider-a/gpt-5.5');
  await shootEverySize(page, shot, 'new-route');

  await form.locator('button[type=submit]').click();
  await expect(page).toHaveURL(/#\/tasks\/[0-9A-Z]{26}$/);
  const id = page.url().split('/').at(-1)!;
  // Its first run meets the 429 on rta: it moves to the fallback route as the same attempt and completes there.
  await expect(page.getByTestId('task-rerouted')).toHaveText(/^rerouted: rate limited on gateway rta until (\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC; moved to fallback route rtb\/provider-b\/gpt-5\.5$/, { timeout: 60_000 });
  await expect(page.getByTestId('task-gateway')).toContainText('gateway rtb as provider-b/gpt-5.5 (Responses API)');
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 60_000 }).toBe('completed');
  expect((await lw.call('get_task', { id })).task).toMatchObject({ gateway: 'rtb', attempt: 1 });
  // The Events card says the move in words too.
  await expect(page.getByText(/^Moved to its model's fallback route, gateway rtb: rate limited on gateway rta until /)).toBeVisible();
  await page.getByTestId('task-gateway').scrollIntoViewIfNeeded();
  await shootEverySize(page, shot, 'task-route');
});
