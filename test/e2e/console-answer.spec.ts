/// <reference lib="dom" />
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

type Lw = { call: (name: string, input?: unknown) => Promise<any>; repo: string };

/** An execute task whose first turn ends asking `ask`, and whose answered turn finishes. */
async function asking(lw: Lw, name: string, ask: unknown): Promise<string> {
  const { task } = await lw.call('delegate_task', {
    objective: `e2e: ${name}`, name, workspace: lw.repo, kind: 'execute', mode: 'auto_execute',
    metadata: { mock: { result: ask, followup: { write_files: { 'answered.txt': 'yes\n' }, result: { summary: 'done', files_changed: ['answered.txt'], notes: null } } } },
  });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 30_000 }).toBe('waiting_input');
  return task.id as string;
}

/** What waits for the person, as the engine counts it: pending requests plus tasks awaiting approval. */
async function waitingCount(lw: Lw): Promise<number> {
  const { requests } = await lw.call('list_requests', { status: ['pending'], limit: 1000 });
  const { tasks } = await lw.call('list_tasks', { status: ['awaiting_approval'], limit: 1000 });
  return requests.length + tasks.length;
}

const QUESTION = { summary: 'need input', files_changed: [], notes: null, escalation: { type: 'question', text: 'Greeting in English or French?', options: ['English', 'French'], command: null, scope: null, reason: 'the objective does not say' } };

test('a task waiting for an answer says so on its own page, and is answered there after a check', async ({ page, lw, shot }) => {
  const id = await asking(lw, 'asks on its page', QUESTION);
  await page.goto(`${lw.url}#/tasks/${id}`);
  const card = page.getByTestId('request-card');
  await expect(card.locator('h2')).toHaveText('Asks you a question');
  await expect(card.locator('[data-field=question]')).toHaveText('Greeting in English or French?');
  await expect(card).toContainText('Why: the objective does not say');
  await expect(card.getByRole('button', { name: 'English' })).toBeVisible();
  await expect(card.getByRole('link', { name: 'inbox' })).toHaveAttribute('href', '#/inbox');
  // The log waits; it has not ended.
  await expect(page.getByTestId('log-state')).toHaveText('waiting for your answer · scrollback');
  // The tab's title counts what waits for the person.
  await expect(page).toHaveTitle(`(${await waitingCount(lw)}) LightWorker`);
  await shootEverySize(page, shot, 'task-waiting-answer');

  // An option goes into the box first: nothing is sent until Send.
  await card.getByRole('button', { name: 'French' }).click();
  await expect(card.getByLabel('Your answer')).toHaveValue('French');
  await expect(card.getByTestId('confirm-answer')).toHaveText('Send “French” as the answer? Edit it first if you like.');
  expect((await lw.call('list_requests', { task_id: id, status: ['pending'] })).requests).toHaveLength(1);
  await card.getByLabel('Your answer').fill('French, please');
  await expect(card.getByTestId('confirm-answer')).toHaveText('Edited: Send answer sends what the box says.');
  const before = await waitingCount(lw);
  await card.locator('button[data-action=send]').click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 30_000 }).toBe('completed');
  const { requests } = await lw.call('list_requests', { task_id: id, status: ['answered'] });
  expect(requests[0]).toMatchObject({ kind: 'question', answer: 'French, please', answeredBy: 'the console' });
  await expect(page.getByTestId('log-state')).toHaveText('ended · scrollback');
  await expect(page).toHaveTitle(before - 1 ? `(${before - 1}) LightWorker` : 'LightWorker');
});

test('a permission request on the task page names the command, its scope and the worktree it touches; Allow resumes it', async ({ page, lw }) => {
  const id = await asking(lw, 'asks to install', { permission_request: { command: 'npm install left-pad', scope: 'network', reason: 'needs a package' } });
  const { task } = await lw.call('get_task', { id });
  await page.goto(`${lw.url}#/tasks/${id}`);
  const card = page.getByTestId('request-card');
  await expect(card.locator('h2')).toHaveText('Asks your permission');
  await expect(card.locator('[data-field=permission]')).toHaveText('command: npm install left-pad');
  await expect(card).toContainText('Scope: network');
  await expect(card).toContainText(task.worktreePath);
  await card.locator('button[data-action=allow]').click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 30_000 }).toBe('completed');
});

test('clicking an option in the inbox asks before it sends', async ({ page, lw }) => {
  const id = await asking(lw, 'asks in the inbox', QUESTION);
  await page.goto(`${lw.url}#/inbox`);
  const card = page.locator(`li.request[data-task-id="${id}"]`);
  await card.getByRole('button', { name: 'English' }).click();
  await expect(card.getByTestId('confirm-answer')).toBeVisible();
  await expect(card).toBeVisible();
  expect((await lw.call('list_requests', { task_id: id, status: ['pending'] })).requests).toHaveLength(1);
  await card.locator('button[data-action=send]').click();
  await expect(card).toHaveCount(0);
  const { requests } = await lw.call('list_requests', { task_id: id, status: ['answered'] });
  expect(requests[0]).toMatchObject({ answer: 'English' });
});
