/// <reference lib="dom" />
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { PERMISSION_COMMAND, permissionScript, QUESTION, questionScript } from '../helpers/hitl-scripts.js';
import { cliUnavailable } from '../helpers/worker-cli.js';
import { expect, test } from './fixtures.js';

const KEY_ENV = 'LW_E2E_HITL_KEY';
let gw: Gateway | null = null;

/**
 * The real Claude Code and Codex CLIs through the scripted gateway, answered by a person in the
 * console: serve is restarted with a gateway in its config.toml (and the key in its environment).
 */
test.beforeAll(async ({ lw }) => {
  gw = await startGateway();
  gw.addScript('perm', permissionScript);
  gw.addScript('question', questionScript);
  writeFileSync(join(lw.home, 'config.toml'), `[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n[scheduler]\nkill_grace_ms = 500\n`);
  process.env[KEY_ENV] = 'sk-e2e-hitl-key-000000';
  await lw.restart();
});
test.afterAll(async ({ lw }) => {
  writeFileSync(join(lw.home, 'config.toml'), '');
  delete process.env[KEY_ENV];
  await lw.restart();
  await gw?.close();
});

async function waitingTask(lw: { call: (n: string, i?: unknown) => Promise<any>; repo: string }, input: Record<string, unknown>): Promise<string> {
  const { task } = await lw.call('delegate_task', { workspace: lw.repo, gateway: 'fake', ...input });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 120_000 }).toBe('waiting_input');
  return task.id as string;
}

async function sessionsOf(lw: { call: (n: string, i?: unknown) => Promise<any> }, id: string): Promise<string[]> {
  const { events } = await lw.call('get_events', { task_id: id, types: ['worker.started'] });
  return events.map((e: { payload: { sessionId: string } }) => e.payload.sessionId);
}

test('Claude Code asks permission; Allow in the console resumes the same session', async ({ page, lw }) => {
  test.setTimeout(240_000);
  const why = await cliUnavailable('claude');
  test.skip(why !== null, why ?? '');
  const id = await waitingTask(lw, { objective: 'Create granted.txt with a node one-liner. [[script:perm]]', kind: 'execute', mode: 'auto_execute', worker: 'claude-code', model: 'claude-sonnet-4-5' });
  const before = (await lw.call('get_task', { id })).task.sessionId;
  await page.goto(`${lw.url}#/inbox`);
  const card = page.locator(`li.request[data-task-id="${id}"]`);
  await expect(card.locator('[data-field=permission]')).toHaveText(`Bash: ${PERMISSION_COMMAND}`);
  await card.locator('button[data-action=allow]').click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 120_000 }).toBe('completed');
  const after = (await lw.call('get_task', { id })).task.sessionId;
  expect(await sessionsOf(lw, id)).toEqual([before, before]);
  console.info(`claude-code permission (console allow): task ${id} session before ${before} after ${after}`);
});

test('Codex asks a question; an option chosen in the console, then Send, resumes the same thread', async ({ page, lw }) => {
  test.setTimeout(240_000);
  const why = await cliUnavailable('codex');
  test.skip(why !== null, why ?? '');
  const id = await waitingTask(lw, { objective: 'Summarize README.md. [[script:question]]', kind: 'explore', worker: 'codex', model: 'gpt-5.5' });
  const before = (await lw.call('get_task', { id })).task.sessionId;
  await page.goto(`${lw.url}#/inbox`);
  const card = page.locator(`li.request[data-task-id="${id}"]`);
  await expect(card.locator('[data-field=question]')).toHaveText(QUESTION);
  await card.getByRole('button', { name: 'English' }).click();
  await card.locator('button[data-action=send]').click();
  await expect(card).toHaveCount(0);
  await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 120_000 }).toBe('completed');
  const t = (await lw.call('get_task', { id })).task;
  expect(t.result).toEqual({ summary: 'Answered in English.', findings: ['the person said: English'] });
  expect(await sessionsOf(lw, id)).toEqual([before, before]);
  console.info(`codex question (console answer): task ${id} session before ${before} after ${t.sessionId}`);
});
