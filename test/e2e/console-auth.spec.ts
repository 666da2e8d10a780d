/// <reference lib="dom" />
import { startConsole, type ConsoleServer } from './console-server.js';
import { expect, test } from './fixtures.js';

/**
 * The console in a browser is only for the user who started serve: the printed URL signs a browser in
 * (HttpOnly cookie, token gone from the address bar); without it the page only says where to get it;
 * after serve restarts the open console says so instead of pretending to be live.
 */

test('a page opened without the token only says to open the printed URL', async ({ browser, lw }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const res = await page.goto(`${lw.url}#/tasks`);
  expect(res?.status()).toBe(401);
  await expect(page.locator('#sign-in')).toContainText('open the URL printed by lightworker serve');
  expect(await page.content()).not.toContain(lw.token);
  await expect(page.getByTestId('live')).toHaveCount(0);
  // A wrong token is no better.
  const wrong = await page.goto(`${lw.url}?token=${'A'.repeat(43)}`);
  expect(wrong?.status()).toBe(403);
  await expect(page.locator('#sign-in')).toBeVisible();
  expect(await context.cookies()).toEqual([]);
  await context.close();
});

test('the printed URL signs in: token gone from the address bar, HttpOnly cookie, the console is live', async ({ browser, lw }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${lw.loginUrl}#/inbox`);
  await expect(page).toHaveURL(`${lw.url}#/inbox`);
  await expect(page.getByTestId('live')).toHaveText(/live/);
  const [cookie] = await context.cookies();
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/', secure: false });
  expect(cookie.value).not.toBe(lw.token);
  expect(await page.evaluate(() => document.cookie)).toBe('');
  expect(await page.content()).not.toContain(lw.token);
  // Writes from the page work with the cookie alone (the console adds its CSRF header).
  await page.goto(`${lw.url}#/new`);
  const form = page.getByRole('form', { name: 'single task' });
  await form.locator('textarea[name=objective]').fill('e2e: signed-in write');
  await form.locator('input[name=name]').fill('signed-in write');
  await form.locator('input[name=workspace]').fill(lw.repo);
  await form.getByRole('button', { name: 'Queue task' }).click();
  await expect(page).toHaveURL(/#\/tasks\/[0-9A-Z]{26}$/);
  await context.close();
});

test.describe('after serve restarts', () => {
  let own: ConsoleServer;
  test.beforeAll(async () => {
    own = await startConsole();
  });
  test.afterAll(async () => own?.stop());

  test('the open console says the server restarted and to open the new URL; the new URL works', async ({ browser, shot }) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${own.loginUrl}#/tasks`);
    await expect(page.getByTestId('live')).toHaveText(/live/);
    const oldToken = own.token;
    await own.restart();
    expect(own.token).not.toBe(oldToken);
    // The event stream reconnects, is refused, and the console says why — without any click.
    await expect(page.getByTestId('signed-out')).toContainText('The server restarted — open the new URL printed by `lightworker serve`');
    await expect(page.getByTestId('live')).toHaveText(/signed out/);
    await shot(page, 'signed-out');
    // A reload cannot help: the old cookie gets only the sign-in page.
    await page.reload();
    await expect(page.locator('#sign-in')).toBeVisible();
    await page.goto(`${own.loginUrl}#/tasks`);
    await expect(page.getByTestId('live')).toHaveText(/live/);
    await expect(page.getByTestId('signed-out')).toHaveCount(0);
    await context.close();
  });

  test('an action in a console whose server restarted fails with the restart message', async ({ browser }) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${own.loginUrl}#/doctor`);
    await expect(page.getByTestId('live')).toHaveText(/live/);
    // Cut the event stream off and leave the session probe unanswered, so only the action can notice the
    // restart (once the page has noticed, the buttons that need the server are disabled instead).
    await page.route('**/api/events*', (route) => route.abort());
    await page.route('**/api/session', () => undefined);
    await own.restart();
    await page.locator('button[data-action=run-doctor]').click();
    await expect(page.getByText('The server restarted — open the new URL printed by `lightworker serve`').first()).toBeVisible();
    await expect(page.getByTestId('signed-out')).toBeVisible();
    await context.close();
  });
});
