/// <reference lib="dom" />
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

// The controls a task takes after it started — follow-up, redirect, handoff, reverify, pause/resume,
// reject — each offered only where the engine takes it, confirmed first, and saying what happened.

type Lw = { call: (name: string, input?: unknown) => Promise<any>; repo: string; url: string };

const scratch = mkdtempSync(join(tmpdir(), 'lw-controls-'));
test.afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const statusOf = async (lw: Lw, id: string) => (await lw.call('get_task', { id })).task.status as string;
const waitFor = (lw: Lw, id: string, status: string) => expect.poll(() => statusOf(lw, id), { timeout: 45_000 }).toBe(status);
const controls = (page: Page) => page.getByTestId('task-controls');
const offered = async (page: Page) => controls(page).locator('button[data-control]').evaluateAll((bs) => bs.map((b) => b.getAttribute('data-control')));

/** Link worker `name`: a script that writes `file` in its folder and answers the execute contract. */
async function linkWriter(lw: Lw, name: string, file: string): Promise<string> {
  const log = join(scratch, `${name}.log`);
  const script = join(scratch, `${name}.mjs`);
  writeFileSync(script, `import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
const prompt = readFileSync(0, 'utf8');
appendFileSync(${JSON.stringify(log)}, JSON.stringify({ cwd: process.cwd(), prompt }) + '\\n');
writeFileSync(${JSON.stringify(file)}, 'by ${name}\\n');
console.log(JSON.stringify({ summary: '${name} finished it', files_changed: [${JSON.stringify(file)}], notes: null }));
`);
  await lw.call('link_worker', { name, command_json: [process.execPath, script] });
  return log;
}

test('a completed task: follow-up, reverify and reject, each confirmed, each saying what happened', async ({ page, lw, shot }) => {
  const { task } = await lw.call('delegate_task', {
    objective: 'write a.txt', name: 'controls on a completed task', workspace: lw.repo, kind: 'execute', mode: 'auto_execute',
    verify: ['test -f a.txt'],
    metadata: { mock: { write_files: { 'a.txt': 'a\n' }, followup: { write_files: { 'b.txt': 'b\n' } } } },
  });
  const id = task.id as string;
  await waitFor(lw, id, 'completed');
  await page.goto(`${lw.url}#/tasks/${id}`);
  await expect(page.getByTestId('detail-status')).toHaveText('completed');
  // Only what the engine takes on a completed execute task with verify commands.
  await expect.poll(() => offered(page)).toEqual(['followup', 'handoff', 'reverify', 'reject']);

  // Follow-up: nothing is sent until the message is written and confirmed.
  await controls(page).locator('button[data-control=followup]').click();
  const confirm = page.getByTestId('control-confirm');
  await expect(confirm.locator('h2')).toHaveText('Follow up “controls on a completed task”?');
  await expect(confirm).toContainText('in the same worktree and branch');
  await expect(confirm.locator('button[data-action=confirm-control]')).toBeDisabled();
  await confirm.getByLabel('Message to the worker').fill('also write b.txt');
  await shootEverySize(page, shot, 'task-controls-followup');
  expect((await lw.call('get_task', { id })).task.attempt).toBe(1);
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText(/^Follow-up sent: attempt 2 is (queued|starting|running|verifying|completed)$/);
  await expect(confirm).toHaveCount(0);
  // The status moves live to the follow-up's end, and the engine ran it in the same worktree.
  await expect(page.getByTestId('detail-status')).toHaveText('completed', { timeout: 45_000 });
  const after = (await lw.call('get_task', { id })).task;
  expect(after.attempt).toBe(2);
  expect(readFileSync(join(after.worktreePath, 'b.txt'), 'utf8')).toBe('b\n');
  const followed = (await lw.call('get_events', { task_id: id, types: ['task.status'], limit: 100 })).events.map((e: any) => e.payload.reason ?? '');
  expect(followed.some((r: string) => r.startsWith('follow-up by the console'))).toBe(true);

  // Reverify: its verify commands again, no worker turn.
  await controls(page).locator('button[data-control=reverify]').click();
  await expect(confirm).toContainText('Run its 1 verify command again as a new attempt, without a worker turn.');
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText(/^Verification runs again: attempt 3/);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.attempt).toBe(3);
  await expect(page.getByTestId('detail-status')).toHaveText('completed', { timeout: 45_000 });

  // Reject, with a reason the engine records; Never mind first sends nothing.
  await controls(page).locator('button[data-control=reject]').click();
  await confirm.locator('button[data-action=cancel-control]').click();
  await expect(confirm).toHaveCount(0);
  expect(await statusOf(lw, id)).toBe('completed');
  await controls(page).locator('button[data-control=reject]').click();
  await expect(confirm).toContainText('Its change is not merged');
  await confirm.getByLabel('Reason (optional)').fill('wrong approach');
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText('Rejected: its change stays out of your branch');
  await expect(page.getByTestId('detail-status')).toHaveText('rejected');
  const rejected = (await lw.call('get_task', { id })).task;
  expect(rejected).toMatchObject({ status: 'rejected', error: { code: 'rejected', message: 'rejected by the console: wrong approach' } });
  // A rejected task is not rejected twice, and can still be reworked.
  await expect.poll(() => offered(page)).toEqual(['followup', 'handoff', 'reverify']);
  expect(existsSync(join(lw.repo, 'a.txt'))).toBe(false);
});

test('a task waiting for an answer: redirect, pause and resume', async ({ page, lw, shot }) => {
  const { task } = await lw.call('delegate_task', {
    objective: 'e2e: the old objective', name: 'controls on a waiting task', workspace: lw.repo, kind: 'execute', mode: 'auto_execute',
    metadata: { mock: { result: { question: { text: 'Which file?', options: ['x', 'y'] } } } },
  });
  const id = task.id as string;
  await waitFor(lw, id, 'waiting_input');
  await page.goto(`${lw.url}#/tasks/${id}`);
  await expect.poll(() => offered(page)).toEqual(['followup', 'redirect', 'handoff', 'pause']);
  const confirm = page.getByTestId('control-confirm');

  // Redirect: the box starts with the objective; the engine stores the new one.
  await controls(page).locator('button[data-control=redirect]').click();
  const box = confirm.getByLabel('New objective');
  await expect(box).toHaveValue('e2e: the old objective');
  await box.fill('e2e: the new objective');
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText('Redirected: the worker gets the new objective at its next turn (task is waiting for your answer)');
  await expect(page.getByTestId('objective')).toHaveText('e2e: the new objective');
  // The question's context shows the objective the worker will now get.
  await expect(page.getByTestId('request-card').locator('pre.objective')).toHaveText('e2e: the new objective');
  expect((await lw.call('get_task', { id })).task.objective).toBe('e2e: the new objective');

  // Pause: the question stays, its expiry stops; Resume puts it back.
  await controls(page).locator('button[data-control=pause]').click();
  await expect(confirm).toContainText('its expiry stops counting');
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText('Paused: the task waits until you resume it');
  await expect(page.getByTestId('detail-status')).toHaveText('paused');
  expect(await statusOf(lw, id)).toBe('paused');
  await expect.poll(() => offered(page)).toEqual(['redirect', 'resume']);
  // The engine refuses an answer while paused: the question is shown, its answer controls held.
  const card = page.getByTestId('request-card');
  await expect(card.getByTestId('request-paused')).toHaveText('Paused: resume the task to answer.');
  await expect(card.getByRole('button', { name: 'x' })).toBeDisabled();
  await shootEverySize(page, shot, 'task-controls-paused');
  await controls(page).locator('button[data-control=resume]').click();
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText('Resumed: the task is waiting for your answer');
  await expect(page.getByTestId('detail-status')).toHaveText('waiting input');
  expect(await statusOf(lw, id)).toBe('waiting_input');
  await expect(card.getByTestId('request-paused')).toHaveCount(0);
  await expect(card.getByRole('button', { name: 'x' })).toBeEnabled();

  // Changed elsewhere (the CLI cancels it), the page drops the controls the engine no longer takes.
  await lw.call('cancel_task', { id });
  await expect(page.getByTestId('detail-status')).toHaveText('cancelled');
  await expect.poll(() => offered(page)).toEqual(['followup', 'handoff']);
});

test('a failed task is handed off to another worker; a refusal is shown where the person clicked', async ({ page, lw }) => {
  const log = await linkWriter(lw, 'finisher', 'parser.txt');
  await linkWriter(lw, 'leaver', 'never.txt');
  const { task } = await lw.call('delegate_task', {
    objective: 'write the parser', name: 'controls handoff', workspace: lw.repo, kind: 'execute', mode: 'auto_execute',
    metadata: { mock: { message: 'I started the parser', fail_message: 'ran out of ideas' } },
  });
  const id = task.id as string;
  await waitFor(lw, id, 'failed');
  await page.goto(`${lw.url}#/tasks/${id}`);
  await controls(page).locator('button[data-control=handoff]').click();
  const confirm = page.getByTestId('control-confirm');
  const target = confirm.getByLabel('Worker to hand off to');
  // The task's own worker is no handoff target.
  expect(await target.locator('option').allTextContents()).not.toContain('mock');

  // Unlinked by another client after the page loaded: the engine refuses, and says so here.
  await lw.call('unlink_worker', { name: 'leaver' });
  await target.selectOption('leaver');
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-error')).toContainText('unknown worker "leaver"');
  await expect(confirm).toBeVisible();
  expect((await lw.call('get_task', { id })).task).toMatchObject({ status: 'failed', worker: 'mock', attempt: 1 });

  await target.selectOption('finisher');
  await confirm.getByLabel('Note for the next worker (optional)').fill('the grammar is in notes');
  await confirm.locator('button[data-action=confirm-control]').click();
  await expect(page.getByTestId('control-outcome')).toHaveText(/^Handed off to finisher: attempt 2 is /);
  await expect(page.getByTestId('control-error')).toHaveCount(0);
  await expect(page.getByTestId('detail-status')).toHaveText('completed', { timeout: 45_000 });
  const t = (await lw.call('get_task', { id })).task;
  expect(t).toMatchObject({ worker: 'finisher', attempt: 2, status: 'completed' });
  const seen = JSON.parse(readFileSync(log, 'utf8').trim().split('\n')[0]);
  expect(seen.cwd).toBe(t.worktreePath);
  expect(seen.prompt).toContain('I started the parser');
  expect(seen.prompt).toContain('Note from the console: the grammar is in notes');
});

test('the controls are disabled while the server cannot be reached', async ({ page, lw }) => {
  const { task } = await lw.call('delegate_task', { objective: 'e2e: offline', name: 'controls offline', workspace: lw.repo, metadata: { mock: {} } });
  await waitFor(lw, task.id, 'completed');
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  const followup = controls(page).locator('button[data-control=followup]');
  await expect(followup).toBeEnabled();
  await followup.click();
  await (lw as unknown as { restart: () => Promise<void> }).restart();
  await expect(page.getByTestId('session-banner')).toBeVisible({ timeout: 30_000 });
  await expect(followup).toBeDisabled();
  await expect(page.getByTestId('control-confirm').locator('button[data-action=confirm-control]')).toBeDisabled();
});
