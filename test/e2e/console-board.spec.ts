/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

function makeRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'e2e@example.com');
  git('config', 'user.name', 'E2E');
  writeFileSync(join(dir, 'README.md'), '# second repo\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  return dir;
}

const scratch = mkdtempSync(join(tmpdir(), 'lw-board-'));
test.afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test('the board sorts tasks into columns by state, moves a card live, and filters by repository and root', async ({ page, lw, shot }) => {
  const other = makeRepo(join(scratch, 'other'));
  const waiting = await lw.call('delegate_task', { objective: 'board: needs a person', name: 'board approval', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 200 } } });
  const asking = await lw.call('delegate_task', {
    objective: 'board: asks', name: 'board question', workspace: lw.repo, kind: 'execute', mode: 'auto_execute',
    metadata: { mock: { result: { question: { text: 'Which name?', options: ['a', 'b'] } } } },
  });
  const failing = await lw.call('delegate_task', { objective: 'board: fails', name: 'board failure', workspace: other, metadata: { mock: { fail_message: 'scripted failure' } } });
  const done = await lw.call('delegate_task', { objective: 'board: works', name: 'board done', workspace: other, metadata: { mock: {} } });
  const status = async (id: string) => (await lw.call('get_task', { id })).task.status;
  await expect.poll(() => status(asking.task.id), { timeout: 30_000 }).toBe('waiting_input');
  await expect.poll(() => status(failing.task.id), { timeout: 30_000 }).toBe('failed');
  await expect.poll(() => status(done.task.id), { timeout: 30_000 }).toBe('completed');

  await page.goto(`${lw.url}#/tasks`);
  await page.getByRole('link', { name: 'Board' }).click();
  await expect(page).toHaveURL(/#\/board$/);
  const card = (id: string) => page.locator(`.board-card[data-task-id="${id}"]`);
  const column = (id: string) => card(id).locator('xpath=ancestor::section[@data-column]');
  await expect(column(waiting.task.id)).toHaveAttribute('data-column', 'approvals');
  await expect(column(asking.task.id)).toHaveAttribute('data-column', 'answers');
  await expect(card(asking.task.id)).toContainText('Which name?');
  await expect(column(failing.task.id)).toHaveAttribute('data-column', 'failed');
  await expect(column(done.task.id)).toHaveAttribute('data-column', 'verified');
  await expect(card(done.task.id)).toContainText('no checks ran');
  await expect(page.locator('section[data-column=approvals] h2')).toContainText('Waiting for you · approvals');

  // Approved elsewhere, the card leaves "waiting for you" without a reload.
  await lw.call('approve_task', { id: waiting.task.id });
  await expect(column(waiting.task.id)).not.toHaveAttribute('data-column', 'approvals');
  await expect(column(waiting.task.id)).toHaveAttribute('data-column', 'verified', { timeout: 30_000 });

  // Repository: only the second repository's cards.
  await page.getByLabel('board repository').selectOption(other);
  await expect(card(failing.task.id)).toBeVisible();
  await expect(card(done.task.id)).toBeVisible();
  await expect(card(asking.task.id)).toHaveCount(0);
  await expect(card(waiting.task.id)).toHaveCount(0);
  // Root: only the tree of one root.
  await page.getByLabel('board root').selectOption(done.task.id);
  await expect(card(done.task.id)).toBeVisible();
  await expect(card(failing.task.id)).toHaveCount(0);
  await page.getByLabel('board root').selectOption('');
  await page.getByLabel('board repository').selectOption('');
  await expect(card(asking.task.id)).toBeVisible();
  await shootEverySize(page, shot, 'board');
});
