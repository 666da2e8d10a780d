/// <reference lib="dom" />
import { expect, test } from './fixtures.js';

test('submit a task with the mock worker and watch it complete live', async ({ page, lw, shot }) => {
  await page.goto(`${lw.url}#/new`);
  await expect(page.getByTestId('live')).toHaveText(/live/);
  const form = page.getByRole('form', { name: 'single task' });
  await form.locator('textarea[name=objective]').fill('e2e: look around the repository');
  await form.locator('input[name=name]').fill('e2e live task');
  await form.locator('input[name=workspace]').fill(lw.repo);
  await form.locator('textarea[name=metadata]').fill(JSON.stringify({ mock: { sleep_ms: 1500, usage: { input: 1000, cached: 900, output: 50 } } }));
  await shot(page, 'new-task');
  await form.getByRole('button', { name: 'Queue task' }).click();
  // The detail page opens and follows the task without a reload.
  await expect(page).toHaveURL(/#\/tasks\/[0-9A-Z]{26}$/);
  const status = page.getByTestId('detail-status');
  await expect(status).toHaveAttribute('data-status', /running|starting|queued/);
  await expect(status).toHaveAttribute('data-status', 'completed', { timeout: 30_000 });
  await expect(page.locator('.events li[data-type="task.status"]').first()).toBeVisible();
  await shot(page, 'task-detail');
  // The list shows it completed too, again without a refresh.
  await page.getByRole('link', { name: /Tasks/ }).first().click();
  await expect(page.locator('tr', { hasText: 'e2e live task' }).locator('.badge')).toHaveAttribute('data-status', 'completed');
  await shot(page, 'tasks');
});

test('a task created elsewhere appears in the open list live, then runs to completion', async ({ page, lw }) => {
  await page.goto(`${lw.url}#/tasks`);
  await expect(page.getByTestId('live')).toHaveText(/live/);
  const { task } = await lw.call('delegate_task', { objective: 'created over the API', name: 'api task', workspace: lw.repo, metadata: { mock: { sleep_ms: 800 } } });
  const row = page.locator(`tr[data-task-id="${task.id}"]`);
  await expect(row).toBeVisible();
  await expect(row.locator('.badge')).toHaveAttribute('data-status', 'completed', { timeout: 30_000 });
});

test('approve an awaiting task from the inbox', async ({ page, lw, shot }) => {
  const { task } = await lw.call('delegate_task', { objective: 'needs a person first', name: 'needs approval', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 300 } } });
  expect(task.status).toBe('awaiting_approval');
  await page.goto(`${lw.url}#/inbox`);
  const card = page.locator(`li[data-task-id="${task.id}"]`);
  await expect(card).toBeVisible();
  await expect(card).toContainText('needs a person first'); // the objective: the inbox asks list_tasks for detail
  await expect(page.getByTestId('inbox-count')).toBeVisible();
  await shot(page, 'inbox');
  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 30_000 }).toBe('completed');
});

test('cancel a running task from its page', async ({ page, lw }) => {
  const { task } = await lw.call('delegate_task', { objective: 'runs for a long time', name: 'to cancel', workspace: lw.repo, metadata: { mock: { sleep_ms: 60_000 } } });
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  const status = page.getByTestId('detail-status');
  await expect(status).toHaveAttribute('data-status', 'running', { timeout: 30_000 });
  page.once('dialog', (d) => void d.accept());
  await page.locator('button[data-action=cancel]').click();
  await expect(status).toHaveAttribute('data-status', 'cancelled', { timeout: 30_000 });
});

test('open a diff', async ({ page, lw, shot }) => {
  const { task } = await lw.call('delegate_task', {
    objective: 'write a file',
    name: 'diff task',
    kind: 'execute',
    mode: 'auto_execute',
    workspace: lw.repo,
    metadata: { mock: { sleep_ms: 200, write_files: { 'hello.txt': 'hello from the mock worker\n' } } },
  });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 45_000 }).toMatch(/completed|failed|awaiting_approval/);
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  // A completed execute task shows its diff without a click: reviewing it is why the page is open.
  await expect(page.locator('.d2h-wrapper')).toBeVisible();
  await expect(page.locator('.d2h-file-name').first()).toContainText('hello.txt');
  await shot(page, 'diff');
});

test('settings save and survive a reload', async ({ page, lw, shot }) => {
  await page.goto(`${lw.url}#/settings`);
  const budget = page.locator('input[name="limits.retry_budget"]');
  await expect(budget).toHaveValue('3');
  await budget.fill('5');
  await page.locator('textarea[name="models.allow"]').fill('mock-model\ngpt-5.5\ngpt-5.5-mini');
  await page.locator('button[data-action=save-settings]').click();
  await expect(page.getByText('Settings saved')).toBeVisible();
  await page.reload();
  await expect(page.locator('input[name="limits.retry_budget"]')).toHaveValue('5');
  await expect(page.locator('textarea[name="models.allow"]')).toHaveValue('mock-model\ngpt-5.5\ngpt-5.5-mini');
  // A bad value is refused with the key named, and nothing changes.
  await page.locator('button[data-action=add-gateway]').click();
  await page.locator('input[name="gateways.new1.name"]').fill('local');
  await page.locator('input[name="gateways.local.base_url"]').fill('not a url');
  await page.locator('input[name="gateways.local.key_env"]').fill('LOCAL_KEY');
  await page.locator('button[data-action=save-settings]').click();
  await expect(page.getByTestId('save-error')).toContainText('gateways.local.base_url');
  expect((await lw.call('get_settings')).config.gateways).toEqual({});
  await shot(page, 'settings');
});

test('copy the MCP snippet', async ({ page, lw, context }) => {
  await page.goto(`${lw.url}#/settings`);
  if (!lw.commands.has('mcp_config')) {
    await expect(page.getByTestId('mcp-unavailable')).toBeVisible();
    process.stderr.write('skipping MCP copy test: mcp_config is not in the command table yet (placeholder checked)\n');
    test.skip(true, 'mcp_config is not in the command table yet (the page shows its placeholder)');
  }
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: lw.url.replace(/\/$/, '') });
  const snippet = page.locator('[data-snippet]');
  await expect(snippet).toContainText('lightworker');
  await page.locator('button[data-action=copy]').click();
  await expect(page.getByText('Copied MCP configuration')).toBeVisible();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await snippet.textContent());
});

test('doctor runs with one click and shows each check', async ({ page, lw, shot }) => {
  await page.goto(`${lw.url}#/doctor`);
  await page.locator('button[data-action=run-doctor]').click();
  await expect(page.locator('li[data-check=git]')).toBeVisible();
  await expect(page.locator('li[data-check=database]')).toHaveClass(/ok/);
  await expect(page.getByTestId('doctor-summary')).toBeVisible();
  await shot(page, 'doctor');
});

test('Cache Lab renders', async ({ page, lw, shot }) => {
  await page.goto(`${lw.url}#/cache`);
  if (!lw.commands.has('get_cache_metrics')) {
    await expect(page.getByTestId('cache-unavailable')).toBeVisible();
    await shot(page, 'cache-lab');
    process.stderr.write('skipping Cache Lab samples: get_cache_metrics is not in the command table yet (the "not available" page was checked)\n');
    test.skip(true, 'get_cache_metrics is not in the command table yet (the page says so)');
  }
  // Samples come from the usage the mock worker reported in the tasks above.
  await expect(page.getByTestId('cache-summary')).toContainText('came from the cache');
  await expect(page.locator('.chart-box canvas')).toBeVisible();
  await shot(page, 'cache-lab');
});

test('keyboard navigation and the dark theme', async ({ page, lw, shot }) => {
  await lw.call('delegate_task', { objective: 'for the keyboard', name: 'keyboard task', workspace: lw.repo, metadata: { mock: { sleep_ms: 100 } } });
  await page.goto(`${lw.url}#/tasks`);
  await expect(page.locator('tr[data-task-id]').first()).toBeVisible();
  await page.keyboard.press('2');
  await expect(page).toHaveURL(/#\/inbox$/);
  await page.keyboard.press('1');
  await page.keyboard.press('j');
  await page.keyboard.press('k');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/#\/tasks\/[0-9A-Z]{26}$/);
  await page.keyboard.press('Escape');
  await expect(page).toHaveURL(/#\/tasks$/);
  await page.keyboard.press('t');
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  expect(['light', 'dark']).toContain(theme);
  if (theme !== 'dark') await page.keyboard.press('t');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await shot(page, 'tasks-dark');
});
