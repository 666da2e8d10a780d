/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { startConsole, type ConsoleServer } from './console-server.js';
import { expect, test } from './fixtures.js';
import { contrastOf, noSidewaysScroll, openAt, shootEverySize, WIDTHS as SIZES } from './page-helpers.js';

// A working day in the console: one execute task reviewed end to end (approve, live log,
// diff, verification, cost, accept) without reading JSON; prices; a server restart; the Goal tab with
// the default mock worker; repositories; open in editor; browser notifications. Both themes, 800 and 1440 px.

/** A second git repository beside the fixture's one. */
function makeRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('-c', 'user.email=e2e@example.com', '-c', 'user.name=E2E', 'commit', '-q', '--allow-empty', '-m', 'initial');
  return dir;
}

/** The worker's chatter: enough lines that the log overflows and has to follow. */
const CHATTER = Array.from({ length: 40 }, (_, i) => ({ type: 'message', text: `thinking about step ${i + 1}` }));

test.describe('review of one execute task, entirely in the console', () => {
  test('approve, watch the live log, read diff, verification and cost, accept', async ({ page, lw, shot }) => {
    await openAt(page, lw.url, '#/new', 1440, 'light');
    const form = page.getByRole('form', { name: 'single task' });
    await form.locator('textarea[name=objective]').fill('write the notes file');
    await form.locator('input[name=name]').fill('review me');
    await form.locator('select[name=kind]').selectOption('execute');
    await form.locator('input[name=workspace]').fill(lw.repo);
    await form.locator('textarea[name=verify]').fill('test -f notes.md && echo notes present\nsh -c "echo checked; exit 0"');
    await form.locator('textarea[name=metadata]').fill(
      JSON.stringify({
        mock: {
          sleep_ms: 4000,
          model: 'claude-sonnet-4-5',
          usage: { input: 1_000_000, cached: 400_000, output: 100_000 },
          events: [...CHATTER, { type: 'tool', name: 'shell', input: { command: 'ls -la' }, output: 'README.md\nnotes.md' }],
          write_files: { 'notes.md': '# notes\n\nwritten by the worker\n' },
        },
      }),
    );
    await form.getByRole('button', { name: 'Queue task' }).click();
    await expect(page).toHaveURL(/#\/tasks\/[0-9A-Z]{26}$/);
    const id = /#\/tasks\/([0-9A-Z]{26})$/.exec(page.url())![1];
    const status = page.getByTestId('detail-status');
    // Execute tasks wait for a person under the default mode: approve here.
    await expect(status).toHaveAttribute('data-status', 'awaiting_approval');
    await page.locator('button[data-action=approve]').click();
    await expect(page.locator('.notice', { hasText: 'Approved: the task is queued' })).toBeVisible();

    // The live log while it runs: the worker's lines as a terminal, following the end.
    const log = page.getByTestId('live-log');
    await expect(status).toHaveAttribute('data-status', 'running', { timeout: 30_000 });
    await expect(page.getByTestId('log-state')).toHaveText('● live');
    await expect(log.locator('.ll-message', { hasText: 'thinking about step 40' })).toBeVisible();
    await expect(log.locator('.ll-tool', { hasText: '$ shell ls -la' })).toBeVisible();
    await expect(log.locator('.ll-output', { hasText: 'notes.md' }).first()).toBeVisible();
    const atEnd = () => log.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 14);
    expect(await log.evaluate((el) => el.scrollHeight > el.clientHeight)).toBe(true);
    await expect.poll(atEnd).toBe(true);
    await shot(page, 'workday-live-log-running-light-1440');
    // Scrolling up stops following (the user reads); new lines do not pull the view down.
    await log.evaluate((el) => {
      el.scrollTop = 0;
      el.dispatchEvent(new Event('scroll'));
    });
    await expect(page.locator('button[data-action=log-follow]')).toBeVisible();

    // It ends: verification lines arrive, the log says it is scrollback now.
    await expect(status).toHaveAttribute('data-status', 'completed', { timeout: 45_000 });
    await expect(log.locator('.ll-verify', { hasText: '$ test -f notes.md && echo notes present  → exit 0' })).toBeVisible();
    await expect(log.locator('.ll-done', { hasText: '✓ verification passed' })).toBeVisible();
    await expect(page.getByTestId('log-state')).toHaveText('ended · scrollback');
    expect(await log.evaluate((el) => el.scrollTop)).toBe(0);
    await page.locator('button[data-action=log-follow]').click();
    await expect.poll(atEnd).toBe(true);

    // Diff (shown without a click), verification per command, usage and cost, the result as text.
    await expect(page.locator('.d2h-file-name', { hasText: 'notes.md' }).first()).toBeVisible();
    await expect(page.getByTestId('verify-command')).toHaveCount(2);
    await expect(page.getByTestId('verify-exit').first()).toHaveText('exit 0');
    await expect(page.getByTestId('usage')).toHaveText('1,000,000 in (400,000 cached) · 100,000 out');
    // 600k × $3 + 400k × $0.30 + 100k × $15 per million.
    await expect(page.getByTestId('cost-task')).toHaveText('$3.42');
    await expect(page.getByTestId('cost-root')).toHaveText('$3.42');
    await expect(page.getByTestId('result-view').locator('[data-field=summary]')).toHaveText('mock completed execute task');
    await expect(page.getByTestId('result-view').locator('[data-field=files_changed] li')).toHaveText(['notes.md']);
    await expect(page.getByTestId('result')).toBeHidden(); // raw JSON only on request

    for (const width of SIZES) {
      for (const theme of ['light', 'dark'] as const) {
        await openAt(page, lw.url, `#/tasks/${id}`, width, theme);
        await expect(page.locator('.d2h-wrapper')).toBeVisible();
        await page.getByLabel('side by side').check();
        await expect(page.locator('.d2h-file-side-diff').first()).toBeVisible();
        await noSidewaysScroll(page, width);
        await shot(page, `workday-review-${theme}-${width}`);
        await page.getByLabel('unified').check();
        await expect(page.locator('.d2h-file-side-diff')).toHaveCount(0);
      }
    }

    // Accept: asked first, then a visible outcome; the change is in the repository.
    page.once('dialog', (d) => void d.accept());
    await page.locator('button[data-action=accept]').click();
    await expect(page.locator('.notice', { hasText: /Accepted: commit [0-9a-f]{10}/ })).toBeVisible();
    await expect(status).toHaveAttribute('data-status', 'accepted');
    expect(readFileSync(join(lw.repo, 'notes.md'), 'utf8')).toBe('# notes\n\nwritten by the worker\n');
    await shot(page, 'workday-accepted-dark-1440');
  });

  test('the live log colours stay readable in both themes (a terminal, dark in each)', async ({ page, lw }) => {
    const { task } = await lw.call('delegate_task', {
      objective: 'talk',
      name: 'log colours',
      workspace: lw.repo,
      metadata: { mock: { sleep_ms: 50, events: [{ type: 'tool', name: 'read', input: { path: 'README.md' }, output: '# e2e repo' }] } },
    });
    await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 30_000 }).toBe('completed');
    for (const theme of ['light', 'dark'] as const) {
      await openAt(page, lw.url, `#/tasks/${task.id}`, 1440, theme);
      for (const kind of ['message', 'tool', 'output', 'usage', 'status', 'done']) {
        const line = page.locator(`.ll-${kind} .ll-text`).first();
        await expect(line).toBeVisible();
        const ratio = await contrastOf(page, `.ll-${kind} .ll-text`);
        expect(ratio, `${kind} line contrast in ${theme}`).toBeGreaterThanOrEqual(4.5);
      }
    }
  });
});

test('prices: edit the table in Settings and the task cost follows', async ({ page, lw, shot }) => {
  const { task } = await lw.call('delegate_task', {
    objective: 'priced',
    name: 'priced task',
    workspace: lw.repo,
    metadata: { mock: { sleep_ms: 50, model: 'house-model', usage: { input: 2_000_000, cached: 0, output: 1_000_000 } } },
  });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 30_000 }).toBe('completed');
  await openAt(page, lw.url, `#/tasks/${task.id}`, 1440, 'light');
  await expect(page.getByTestId('cost-task')).toHaveText('—');
  await expect(page.getByTestId('cost-unpriced')).toContainText('no price for house-model');
  for (const width of SIZES) {
    for (const theme of ['light', 'dark'] as const) {
      await openAt(page, lw.url, '#/settings', width, theme);
      await expect(page.getByTestId('prices').locator('tr[data-model="gpt-5.5"]')).toBeVisible();
      await noSidewaysScroll(page, width);
      await shot(page, `workday-settings-prices-${theme}-${width}`);
    }
  }
  const prices = page.getByTestId('prices');
  await prices.locator('button[data-action=add-price]').click();
  const row = prices.locator('tbody tr').last();
  await row.locator('input[aria-label=model]').fill('house-model');
  await row.locator('input[aria-label="input price"]').fill('2');
  await row.locator('input[aria-label="output price"]').fill('10');
  await prices.locator('button[data-action=save-prices]').click();
  await expect(page.locator('.notice', { hasText: 'Prices saved' })).toBeVisible();
  expect(readFileSync(join(lw.home, 'config.toml'), 'utf8')).toMatch(/house-model/);
  // A bad price is refused with the key named; the table stays as it was.
  const sonnet = prices.locator('tr[data-model="claude-sonnet-4-5"]');
  await sonnet.locator('input[aria-label="input price"]').fill('-3');
  await prices.locator('button[data-action=save-prices]').click();
  await expect(page.getByTestId('settings-error')).toContainText('prices.claude-sonnet-4-5.input');
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  // 2M × $2 + 1M × $10 per million.
  await expect(page.getByTestId('cost-task')).toHaveText('$14.00');
  await expect(page.getByTestId('cost-unpriced')).toHaveCount(0);
});

test.describe('after serve restarts', () => {
  let own: ConsoleServer;
  test.beforeAll(async () => {
    own = await startConsole();
  });
  test.afterAll(async () => own?.stop());

  test('a banner says so and signs in again with the new URL pasted; actions work again', async ({ browser, shot }) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${own.loginUrl}#/inbox`);
    await expect(page.getByTestId('live')).toHaveText(/live/);
    await own.restart();
    const banner = page.getByTestId('session-banner');
    await expect(banner).toContainText('The server restarted');
    await expect(page.getByTestId('live')).toHaveText(/signed out/);
    await shootEverySize(page, shot, 'workday-signed-out');
    // Something that is not a console URL is refused where it was typed.
    await banner.locator('input[name=login-url]').fill('https://example.com/?token=abc');
    await banner.locator('button[data-action=sign-in-again]').click();
    await expect(page.getByTestId('sign-in-bad')).toBeVisible();
    // The new URL, pasted: signed in again on the same page, live, and an approval goes through.
    const { task } = await own.call('delegate_task', { objective: 'after restart', name: 'approve after restart', workspace: own.repo, mode: 'plan_only' });
    await banner.locator('input[name=login-url]').fill(own.loginUrl);
    await banner.locator('button[data-action=sign-in-again]').click();
    await expect(page).toHaveURL(`${own.url}#/inbox`);
    await expect(page.getByTestId('live')).toHaveText(/live/);
    await expect(page.getByTestId('session-banner')).toHaveCount(0);
    await page.locator(`li[data-task-id="${task.id}"] button[data-action=approve]`).click();
    await expect(page.locator('.notice', { hasText: 'Approved "approve after restart"' })).toBeVisible();
    await expect.poll(async () => (await own.call('get_task', { id: task.id })).task.status).not.toBe('awaiting_approval');
    await context.close();
  });
});

test('the Goal tab plans and runs with the default mock worker; a fixed field clears the error', async ({ page, lw, shot }) => {
  await openAt(page, lw.url, '#/new', 1440, 'light');
  await page.getByRole('tab', { name: 'Goal' }).click();
  const form = page.getByRole('form', { name: 'goal' });
  await expect(form.locator('select[name=worker] option', { hasText: 'mock' })).toHaveCount(1);
  await form.locator('textarea[name=goal]').fill('add a changelog');
  await form.locator('input[name=workspace]').fill(join(lw.repo, 'not-here'));
  await form.getByRole('button', { name: 'Plan and queue' }).click();
  const error = page.getByTestId('submit-error');
  await expect(error).toContainText('workspace');
  await expect(error).not.toContainText('orchestrate_goal:');
  // Fixing the field clears the error at once (it was about the previous attempt).
  await form.locator('input[name=workspace]').fill(lw.repo);
  await expect(error).toHaveCount(0);
  await form.locator('textarea[name=metadata]').fill('{"mock": ');
  await form.getByRole('button', { name: 'Plan and queue' }).click();
  await expect(page.getByTestId('metadata-error')).toContainText('metadata: not valid JSON');
  await form.locator('textarea[name=metadata]').fill('{"mock": {"sleep_ms": 100}}');
  await expect(page.getByTestId('metadata-error')).toHaveCount(0);
  await shootEverySize(page, shot, 'workday-new-goal');
  await form.getByRole('button', { name: 'Plan and queue' }).click();
  await expect(page).toHaveURL(/#\/tasks\/[0-9A-Z]{26}$/);
  await expect(page.getByTestId('detail-status')).toHaveAttribute('data-status', 'completed', { timeout: 45_000 });
  const tree = page.locator('.tree');
  await expect(tree.locator('.tree-node', { hasText: 'survey: add a changelog' })).toBeVisible();
  await expect(tree.locator('.tree-node', { hasText: 'report: add a changelog' })).toBeVisible();
  await expect(tree.locator('.tree-node', { hasText: 'report: add a changelog' }).locator('.badge')).toHaveAttribute('data-status', 'completed', { timeout: 45_000 });
  // The repository is offered again, one click away.
  await page.goto(`${lw.url}#/new`);
  const form2 = page.getByRole('form', { name: 'single task' });
  await form2.locator('input[name=workspace]').fill('');
  await page.getByTestId('recent-repos').getByRole('button', { name: lw.repo.split('/').pop()! }).click();
  await expect(form2.locator('input[name=workspace]')).toHaveValue(lw.repo);
});

test('repository column and filter in the task list', async ({ page, lw, shot }) => {
  const other = makeRepo(join(lw.home, '..', 'other-repo'));
  const a = await lw.call('delegate_task', { objective: 'in the first', name: 'first repo task', workspace: lw.repo, mode: 'plan_only' });
  const b = await lw.call('delegate_task', { objective: 'in the other', name: 'other repo task', workspace: other, mode: 'plan_only' });
  for (const width of SIZES) {
    for (const theme of ['light', 'dark'] as const) {
      await openAt(page, lw.url, '#/tasks', width, theme);
      await expect(page.locator(`tr[data-task-id="${b.task.id}"] [data-col=repo]`)).toHaveText('other-repo');
      await expect(page.locator(`tr[data-task-id="${b.task.id}"] [data-col=repo]`)).toHaveAttribute('title', other);
      const select = page.locator('select[name=repository]');
      await select.selectOption(other);
      await expect(page.locator(`tr[data-task-id="${b.task.id}"]`)).toBeVisible();
      await expect(page.locator(`tr[data-task-id="${a.task.id}"]`)).toHaveCount(0);
      await noSidewaysScroll(page, width);
      await shot(page, `workday-repo-filter-${theme}-${width}`);
      await select.selectOption('');
      await expect(page.locator(`tr[data-task-id="${a.task.id}"]`)).toBeVisible();
    }
  }
  await lw.call('cancel_task', { id: a.task.id });
  await lw.call('cancel_task', { id: b.task.id });
});

test('open the worktree in the editor: the configured argv gets the worktree path', async ({ page, lw }) => {
  const log = join(lw.home, 'editor-opened.log');
  const bin = join(lw.home, 'fake-editor');
  writeFileSync(bin, `#!/bin/sh\nprintf '%s\\n' "$@" > '${log}'\n`);
  chmodSync(bin, 0o755);
  await lw.call('update_settings', { settings: { editor: { command: [bin, '--goto', '{path}'] } } });
  const { task } = await lw.call('delegate_task', {
    objective: 'edit',
    name: 'editor task',
    kind: 'execute',
    mode: 'auto_execute',
    workspace: lw.repo,
    metadata: { mock: { sleep_ms: 50, write_files: { 'ed.txt': 'x\n' } } },
  });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 30_000 }).toBe('completed');
  const worktree = (await lw.call('get_task', { id: task.id })).task.worktreePath as string;
  await openAt(page, lw.url, `#/tasks/${task.id}`, 1440, 'light');
  await page.locator('button[data-action=open-editor]').click();
  await expect(page.locator('.notice', { hasText: `Opened ${worktree} in fake-editor` })).toBeVisible();
  await expect.poll(() => (existsSync(log) ? readFileSync(log, 'utf8') : '')).toBe(`--goto\n${worktree}\n`);
  // A broken editor setting is a visible error, not a silent nothing.
  await lw.call('update_settings', { settings: { editor: { command: [join(lw.home, 'no-such-editor'), '{path}'] } } });
  await page.locator('button[data-action=open-editor]').click();
  await expect(page.locator('.notice.error', { hasText: 'is not an executable on PATH' })).toBeVisible();
  await lw.call('update_settings', { settings: { editor: {} } });
});

test.describe('browser notifications', () => {
  // chrome-headless-shell (the @sparticuz/chromium build a machine without a system Chromium uses) has no
  // notification service: requestPermission() answers "granted", Notification.permission stays "denied"
  // and every notification fails. There the console says so and announces in the page instead (the
  // fallback test); the real-notification test runs where the browser can show them (CI: the system one).
  let real = false;
  test.beforeEach(async ({ browser, lw }) => {
    const probe = await browser.newContext();
    await probe.grantPermissions(['notifications'], { origin: new URL(lw.url).origin });
    const page = await probe.newPage();
    await page.goto(lw.loginUrl);
    const granted = await page.evaluate(() => Notification.permission);
    await probe.close();
    real = granted === 'granted';
    if (process.env.CI === 'true') expect(granted, 'the browser kept notifications denied after grantPermissions').toBe('granted');
  });

  /** What chrome-headless-shell answers, for a browser that can notify: the fallback is then checked there too. */
  const NO_SERVICE = () => {
    Object.defineProperty(Notification, 'permission', { get: () => 'denied', configurable: true });
    Object.defineProperty(Notification, 'requestPermission', { value: async () => 'granted', configurable: true });
  };

  /** Record every notification the page makes (the real API underneath) and keep the page "in the background". */
  const RECORD = () => {
    const Real = window.Notification;
    const notes: { title: string; body: string; n: Notification }[] = [];
    (window as unknown as { __notes: typeof notes }).__notes = notes;
    class Recorded extends Real {
      constructor(title: string, opts?: NotificationOptions) {
        super(title, opts);
        notes.push({ title, body: opts?.body ?? '', n: this });
      }
    }
    Object.defineProperty(window, 'Notification', { value: Recorded, configurable: true });
    Document.prototype.hasFocus = () => false;
  };
  const notes = (page: Page) => page.evaluate(() => (window as unknown as { __notes: { title: string; body: string }[] }).__notes.map((n) => `${n.title}: ${n.body}`));

  test('turned on in Settings (the browser asks), an approval notifies once and a click opens the task; off stops them', async ({ browser, lw, shot }) => {
    test.skip(!real, 'this Chromium has no notification service (a headless shell build): the fallback test below checks what the console does there');
    const context = await browser.newContext();
    await context.grantPermissions(['notifications'], { origin: new URL(lw.url).origin });
    await context.addInitScript(RECORD);
    const page = await context.newPage();
    await page.goto(`${lw.loginUrl}#/settings`);
    const box = page.getByTestId('browser-notifications');
    await expect(box.getByTestId('notify-state')).toHaveText('off');
    await box.locator('button[data-action=notify-on]').click();
    await expect(box.getByTestId('notify-state')).toHaveText('on');
    await expect(box.getByTestId('notify-permission')).toHaveText('granted');
    await box.scrollIntoViewIfNeeded();
    await shootEverySize(page, shot, 'workday-settings-notifications');
    const { task } = await lw.call('delegate_task', { objective: 'ask me', name: 'notify me', workspace: lw.repo, mode: 'plan_only' });
    await expect.poll(() => notes(page), { timeout: 15_000 }).toEqual(['Approval needed: notify me']);
    // Several at once: one notification naming how many.
    const many = await lw.call('delegate_batch', { tasks: [1, 2, 3].map((i) => ({ objective: `m${i}`, name: `many ${i}`, workspace: lw.repo, mode: 'plan_only' })) });
    await expect.poll(() => notes(page), { timeout: 15_000 }).toEqual(['Approval needed: notify me', 'Approvals needed: 3 tasks await approval']);
    await page.evaluate(() => (window as unknown as { __notes: { n: Notification }[] }).__notes[0].n.onclick?.(new Event('click')));
    await expect(page).toHaveURL(new RegExp(`#/tasks/${task.id}$`));
    // Turned off: nothing more.
    await page.goto(`${lw.url}#/settings`);
    await page.getByTestId('browser-notifications').locator('button[data-action=notify-off]').click();
    const quiet = await lw.call('delegate_task', { objective: 'quiet', name: 'no notification', workspace: lw.repo, mode: 'plan_only' });
    // The inbox count shows the event arrived; still no third notification, even after the batch window.
    await expect(page.getByTestId('inbox-count')).toBeVisible();
    await page.waitForTimeout(2500);
    expect(await notes(page)).toHaveLength(2);
    await lw.call('cancel_task', { id: quiet.task.id });
    for (const t of [task, ...many.tasks]) await lw.call('cancel_task', { id: t.id });
    await context.close();
  });

  test('a browser without a notification service says so, and what waits is announced in the page instead', async ({ browser, lw, shot }) => {
    const context = await browser.newContext();
    await context.grantPermissions(['notifications'], { origin: new URL(lw.url).origin });
    // The headless shell gives these answers itself; a browser that can notify is made to give them.
    if (real) await context.addInitScript(NO_SERVICE);
    const page = await context.newPage();
    await page.goto(`${lw.loginUrl}#/settings`);
    const box = page.getByTestId('browser-notifications');
    await expect(box).toHaveAttribute('data-support', 'no_service');
    await expect(box.getByTestId('notify-unavailable')).toContainText('This browser cannot show notifications: it answers the permission request but has no notification service');
    await expect(box.getByTestId('notify-unavailable')).toContainText('announced in this page instead');
    await expect(box.getByTestId('notify-state')).toHaveText('off');
    await box.locator('button[data-action=notify-on]').click();
    await expect(box.getByTestId('notify-state')).toHaveText('on, in this page');
    await box.scrollIntoViewIfNeeded();
    await shootEverySize(page, shot, 'workday-settings-notifications-unavailable');

    const { task } = await lw.call('delegate_task', { objective: 'ask me here', name: 'announce me', workspace: lw.repo, mode: 'plan_only' });
    const note = page.getByTestId('announcement');
    await expect(note).toHaveText('Approval needed: announce me');
    const waiting = await page.getByTestId('inbox-count').textContent();
    await expect(page).toHaveTitle(`(${waiting}) LightWorker`);
    await shootEverySize(page, shot, 'workday-announcement');
    // Following it opens the task and takes the notice away.
    await note.click();
    await expect(page).toHaveURL(new RegExp(`#/tasks/${task.id}$`));
    await expect(note).toHaveCount(0);
    // Turned off: nothing more is announced.
    await page.goto(`${lw.url}#/settings`);
    await page.getByTestId('browser-notifications').locator('button[data-action=notify-off]').click();
    await expect(page.getByTestId('browser-notifications').getByTestId('notify-state')).toHaveText('off');
    const quiet = await lw.call('delegate_task', { objective: 'quiet here', name: 'not announced', workspace: lw.repo, mode: 'plan_only' });
    await expect(page.getByTestId('inbox-count')).toHaveText(String(Number(waiting) + 1));
    await expect(page.getByTestId('announcement')).toHaveCount(0);
    for (const id of [task.id, quiet.task.id]) await lw.call('cancel_task', { id });
    await context.close();
  });

  test('a browser that refuses permission leaves them off and says where to allow them', async ({ browser, lw }) => {
    test.skip(!real, 'this Chromium cannot notify at all: the fallback test above covers it');
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${lw.loginUrl}#/settings`);
    await page.evaluate(() => {
      Object.defineProperty(Notification, 'requestPermission', { value: async () => 'denied', configurable: true });
      Object.defineProperty(Notification, 'permission', { get: () => 'denied', configurable: true });
    });
    const box = page.getByTestId('browser-notifications');
    await box.locator('button[data-action=notify-on]').click();
    await expect(box.getByTestId('notify-state')).toHaveText('off');
    await expect(box).toContainText('The browser blocks notifications');
    await context.close();
  });
});

test('a task created awaiting approval appears in the open inbox and its count at once', async ({ page, lw }) => {
  await openAt(page, lw.url, '#/inbox', 1440, 'light');
  await expect(page.getByTestId('live')).toHaveText(/live/);
  const before = await page.locator('ul.inbox > li').count();
  const { task } = await lw.call('delegate_task', { objective: 'new while open', name: 'arrives live', workspace: lw.repo, mode: 'plan_only' });
  await expect(page.locator(`li.card[data-task-id="${task.id}"]`)).toBeVisible();
  await expect(page.getByTestId('inbox-count')).toHaveText(String(before + 1));
  await lw.call('cancel_task', { id: task.id });
  await expect(page.locator(`li.card[data-task-id="${task.id}"]`)).toHaveCount(0);
});

test('a long log opens at its end; earlier lines load on request', async ({ page, lw }) => {
  const lines = Array.from({ length: 2100 }, (_, i) => ({ type: 'message', text: `line ${i + 1}` }));
  // More than one page of the console's log (2,000 events) needs more than the default cap of stored events.
  await lw.call('update_settings', { settings: { output: { max_events: 5000 } } });
  const { task } = await lw.call('delegate_task', { objective: 'chatty', name: 'long log', workspace: lw.repo, metadata: { mock: { sleep_ms: 10, events: lines } } });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 45_000 }).toBe('completed');
  await lw.call('update_settings', { settings: { output: { max_events: null } } });
  // The engine kept every line (so a line missing below is the console's doing, not the store's).
  const stored = await lw.call('get_events', { task_id: task.id, limit: 2000, newest: true });
  expect(stored.events.filter((e: { type: string }) => e.type === 'worker.message').at(-1)?.payload?.text).toBe('line 2100');
  // The log cannot be loaded at first (a busy server): the log says so instead of looking empty, and loads
  // on its own once the server answers.
  let busy = true;
  await page.route('**/api/commands/get_events', (route) =>
    busy ? route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'busy', message: 'the server is busy' } }) }) : route.fallback(),
  );
  await openAt(page, lw.url, `#/tasks/${task.id}`, 1440, 'dark');
  await expect(page.getByTestId('log-load-error')).toContainText('The log could not be loaded');
  busy = false;
  const log = page.getByTestId('live-log');
  await expect(log.locator('.ll-message .ll-text', { hasText: /^line 2100$/ })).toHaveCount(1);
  await expect(log.locator('.ll-message .ll-text', { hasText: /^line 1$/ })).toHaveCount(0);
  await log.locator('button[data-action=log-earlier]').click();
  await expect(log.locator('.ll-message .ll-text', { hasText: /^line 1$/ })).toHaveCount(1);
  await expect(log.locator('button[data-action=log-earlier]')).toHaveCount(0);
  // Every line once: the 2,100 scripted ones and the mock's own "received N prompt bytes".
  expect(await log.locator('.ll-message').count()).toBe(2101);
});

test.describe('when serve stops', () => {
  let own: ConsoleServer;
  test.beforeAll(async () => {
    own = await startConsole();
  });
  test.afterAll(async () => own?.stop());

  test('an offline banner while it is gone; when it is back with a new token, the signed-out banner', async ({ browser, shot }) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${own.loginUrl}#/tasks`);
    await expect(page.getByTestId('live')).toHaveText(/live/);
    const exited = new Promise((r) => own.proc.once('exit', r));
    own.proc.kill('SIGKILL');
    await exited;
    await expect(page.getByTestId('offline-banner')).toContainText('The console server is not reachable');
    await expect(page.getByTestId('live')).toHaveText(/offline/);
    await shootEverySize(page, shot, 'workday-offline');
    await own.restart();
    await expect(page.getByTestId('session-banner')).toContainText('The server restarted', { timeout: 30_000 });
    await expect(page.getByTestId('offline-banner')).toHaveCount(0);
    await context.close();
  });
});
