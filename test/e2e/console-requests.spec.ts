/// <reference lib="dom" />
import { expect, test } from './fixtures.js';

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

async function sessions(lw: Lw, id: string): Promise<string[]> {
  const { events } = await lw.call('get_events', { task_id: id, types: ['worker.started'] });
  return events.map((e: { payload: { sessionId: string } }) => e.payload.sessionId);
}

test('the inbox shows a question with its context; an option, then Send, answers it and the task continues in its session', async ({ page, lw, shot }) => {
  const id = await asking(lw, 'asks a question', { summary: 'need input', files_changed: [], notes: null, escalation: { type: 'question', text: 'Greeting in English or French?', options: ['English', 'French'], command: null, scope: null, reason: 'the objective does not say' } });
  const before = (await lw.call('get_task', { id })).task.sessionId;
  await page.goto(`${lw.url}#/inbox`);
  const card = page.locator(`li.request[data-task-id="${id}"]`);
  await expect(card).toBeVisible();
  await expect(card.locator('[data-field=question]')).toHaveText('Greeting in English or French?');
  await expect(card).toContainText('Why: the objective does not say');
  await expect(page.getByTestId('inbox-count')).toBeVisible();
  await shot(page, 'inbox-question');
  await card.getByRole('button', { name: 'French' }).click();
  await card.locator('button[data-action=send]').click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 30_000 }).toBe('completed');
  const { requests } = await lw.call('list_requests', { task_id: id, status: ['answered'] });
  expect(requests[0]).toMatchObject({ kind: 'question', answer: 'French', answeredBy: 'the console' });
  const after = (await lw.call('get_task', { id })).task.sessionId;
  expect(await sessions(lw, id)).toEqual([before, before]);
  console.info(`console question: task ${id} session before ${before} after ${after}`);
});

test('the inbox shows a permission request; Allow resumes the task, and a typed answer works for a question', async ({ page, lw, shot }) => {
  const id = await asking(lw, 'asks a permission', { permission_request: { command: 'npm install left-pad', scope: 'network', reason: 'needs a package' } });
  const before = (await lw.call('get_task', { id })).task.sessionId;
  await page.goto(`${lw.url}#/inbox`);
  const card = page.locator(`li.request[data-task-id="${id}"]`);
  await expect(card.locator('[data-field=permission]')).toHaveText('command: npm install left-pad');
  await expect(card).toContainText('Scope: network');
  await shot(page, 'inbox-permission');
  await card.locator('button[data-action=allow]').click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 30_000 }).toBe('completed');
  const { requests } = await lw.call('list_requests', { task_id: id, status: ['answered'] });
  expect(requests[0]).toMatchObject({ kind: 'permission', decision: 'allow', answeredBy: 'the console' });
  const after = (await lw.call('get_task', { id })).task.sessionId;
  expect(await sessions(lw, id)).toEqual([before, before]);
  console.info(`console permission: task ${id} session before ${before} after ${after}`);

  // A question answered by typing, and it appears live (the page is already open).
  const typed = await asking(lw, 'asks for a name', { question: { text: 'What should the file be called?', options: [] } });
  const typedCard = page.locator(`li.request[data-task-id="${typed}"]`);
  await expect(typedCard).toBeVisible();
  await typedCard.getByLabel('Your answer').fill('greeting.txt');
  await typedCard.locator('button[data-action=send]').click();
  await expect(typedCard).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id: typed })).task.status, { timeout: 30_000 }).toBe('completed');
});
