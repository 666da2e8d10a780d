/// <reference lib="dom" />
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

// A team in the console: its members (worker, model, status), rounds, verdicts and the winner, live,
// reached from any member's page; accepting its result and cancelling it, each confirmed.

type Lw = { call: (name: string, input?: unknown) => Promise<any>; repo: string; url: string };

const scratch = mkdtempSync(join(tmpdir(), 'lw-team-'));
test.afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const member = (page: Page, id: string) => page.locator(`tr[data-member-id="${id}"]`);
const report = (lw: Lw, id: string) => lw.call('team_report', { id });

/** A reviewer CLI: asks for a fix until the diff it is shown has "+hello", then approves. */
async function linkReviewer(lw: Lw): Promise<void> {
  const script = join(scratch, 'reviewer.mjs');
  writeFileSync(script, `import { readFileSync } from 'node:fs';
const prompt = readFileSync(0, 'utf8');
console.log(JSON.stringify(/^\\+hello$/m.test(prompt)
  ? { summary: 'good', verdict: 'approve', issues: [] }
  : { summary: 'typo', verdict: 'request_changes', issues: [{ file: 'greet.txt', severity: 'high', message: 'spell it hello' }] }));
`);
  await lw.call('link_worker', { name: 'reviewer', command_json: [process.execPath, script] });
}

test('implement_review: the rounds and verdicts appear live, and Accept team takes the reviewed change', async ({ page, lw, shot }) => {
  await linkReviewer(lw);
  const mock = { sleep_ms: 2500, write_files: { 'greet.txt': 'helo\n' }, followup: { sleep_ms: 0, write_files: { 'greet.txt': 'hello\n' } } };
  const t = await lw.call('start_team', {
    strategy: 'implement_review', workers: ['mock', 'reviewer'], rounds: 3, objective: 'write a greeting to greet.txt', name: 'greeting',
    workspace: lw.repo, mode: 'auto_execute', verify: ['test -s greet.txt'], metadata: { mock },
  });
  const implId = t.rootId as string;
  // From a member's page to its team.
  await page.goto(`${lw.url}#/tasks/${t.tasks[1].id}`);
  await expect(page.getByTestId('team-link')).toContainText('The review of a implement review team');
  await page.getByTestId('team-link').getByRole('link', { name: 'open the team view' }).click();
  await expect(page).toHaveURL(new RegExp(`#/teams/${implId}$`));
  const view = page.getByTestId('team-view');
  await expect(view.locator('h1')).toHaveText('Team · implement review');
  await expect(page.getByTestId('team-state')).toHaveText('running');
  await expect(page.getByTestId('team-winner')).toHaveText('not decided yet');
  await expect(page.locator('button[data-action=accept-team]')).toBeDisabled();
  await expect(view.locator('tr[data-member-id]')).toHaveCount(2);

  // The second review round is created while the page is open, and the team ends passed.
  await expect(view.locator('tr[data-role=review]')).toHaveCount(2, { timeout: 60_000 });
  await expect(page.getByTestId('team-state')).toHaveText('passed', { timeout: 60_000 });
  await expect(page.getByTestId('team-state-words')).toHaveText('the review passed: the change can be accepted');
  await expect(page.getByTestId('team-rounds')).toHaveText('2 review rounds of at most 3');
  const r = await report(lw, implId);
  const [review1, review2] = r.members.filter((m: any) => m.role === 'review');
  await expect(member(page, review1.id).locator('[data-field=verdict]')).toHaveText('request_changes');
  await expect(member(page, review2.id).locator('[data-field=verdict]')).toHaveText('approve');
  await expect(member(page, implId)).toContainText('implementer');
  await expect(member(page, implId)).toContainText('mock');
  await expect(member(page, implId).getByTestId('winner-mark')).toHaveText('winner');
  await expect(member(page, implId).locator('td').nth(4)).toHaveText('2');
  await expect(page.getByTestId('team-winner')).toHaveText('implementer · mock');
  await shootEverySize(page, shot, 'team-view');

  // Accept team: confirmed first, then the reviewed change is one commit in the user's branch.
  expect(existsSync(join(lw.repo, 'greet.txt'))).toBe(false);
  await page.locator('button[data-action=accept-team]').click();
  const confirm = page.getByTestId('team-confirm');
  await expect(confirm).toContainText('implementer · mock becomes one commit in your branch.');
  await confirm.locator('button[data-action=confirm-team]').click();
  await expect(page.getByTestId('team-outcome')).toHaveText(new RegExp(`^Accepted the team's result \\(${implId}\\): commit [0-9a-f]{10}`));
  await expect(member(page, implId).locator('[data-status]')).toHaveText('accepted');
  await expect(page.locator('button[data-action=accept-team]')).toBeDisabled();
  expect(readFileSync(join(lw.repo, 'greet.txt'), 'utf8')).toBe('hello\n');
  expect((await lw.call('get_task', { id: implId })).task.status).toBe('accepted');
});

test('best_of_n: each candidate with its model, the ranking and the winner the rule chose', async ({ page, lw, shot }) => {
  const mock = { by_model: { 'gpt-5.5': { write_files: { 'out.txt': 'one\ntwo\nthree\n' } }, 'gpt-5.5-mini': { write_files: { 'out.txt': 'one\n' } } } };
  const t = await lw.call('start_team', {
    strategy: 'best_of_n', workers: ['mock:gpt-5.5', 'mock:gpt-5.5-mini'], objective: 'write out.txt', name: 'pick one',
    workspace: lw.repo, mode: 'auto_execute', verify: ['test -f out.txt'], metadata: { mock },
  });
  const [alpha, beta] = t.tasks.map((x: any) => x.id as string);
  await expect.poll(async () => (await report(lw, alpha)).state, { timeout: 60_000 }).toBe('ranked');
  await page.goto(`${lw.url}#/teams/${alpha}`);
  await expect(page.getByTestId('team-state')).toHaveText('ranked');
  await expect(member(page, alpha).locator('td').nth(2)).toHaveText('gpt-5.5');
  await expect(member(page, beta).locator('td').nth(2)).toHaveText('gpt-5.5-mini');
  // Verified first, then the smallest diff: the second's one line beats the first's three.
  await expect(member(page, alpha).locator('td').nth(5)).toHaveText('3 lines');
  await expect(member(page, beta).locator('td').nth(5)).toHaveText('1 line');
  await expect(member(page, beta).getByTestId('winner-mark')).toBeVisible();
  await expect(member(page, alpha).getByTestId('winner-mark')).toHaveCount(0);
  await expect(page.getByTestId('team-winner')).toHaveText('candidate 2 · mock:gpt-5.5-mini · chosen by rule');
  await expect(page.getByTestId('team-ranking').locator('li')).toHaveText(['candidate 2 · mock:gpt-5.5-mini', 'candidate 1 · mock:gpt-5.5']);
  expect((await report(lw, alpha)).outcome).toMatchObject({ winner: beta, ranking: [beta, alpha], by: 'rule' });
  await shootEverySize(page, shot, 'team-view-best-of-n');
  // A member row opens that member's page.
  await member(page, beta).click();
  await expect(page).toHaveURL(new RegExp(`#/tasks/${beta}$`));
});

test('Cancel team cancels every member still working, after a confirmation; the team ends without a winner', async ({ page, lw }) => {
  const t = await lw.call('start_team', {
    strategy: 'best_of_n', workers: ['mock:gpt-5.5', 'mock:claude-haiku-4-5'], objective: 'take your time', name: 'slow team',
    workspace: lw.repo, mode: 'auto_execute', metadata: { mock: { sleep_ms: 60_000 } },
  });
  const ids = t.tasks.map((x: any) => x.id as string);
  await page.goto(`${lw.url}#/teams/${ids[0]}`);
  await expect(page.getByTestId('team-state')).toHaveText('running');
  await page.locator('button[data-action=cancel-team]').click();
  const confirm = page.getByTestId('team-confirm');
  await expect(confirm).toContainText('Every member that has not ended is cancelled');
  await confirm.locator('button[data-action=cancel-control]').click();
  await expect(confirm).toHaveCount(0);
  expect((await report(lw, ids[0])).state).toBe('running');
  await page.locator('button[data-action=cancel-team]').click();
  await confirm.locator('button[data-action=confirm-team]').click();
  await expect(page.getByTestId('team-outcome')).toHaveText('Cancel requested for 2 members');
  await expect(page.getByTestId('team-state')).toHaveText('no candidate completed', { timeout: 60_000 });
  for (const id of ids) await expect(member(page, id).locator('[data-status]')).toHaveText('cancelled');
  await expect(page.getByTestId('team-winner')).toHaveText('none');
  await expect(page.locator('button[data-action=cancel-team]')).toBeDisabled();
  await expect(page.locator('button[data-action=accept-team]')).toBeDisabled();
});

test('a task that is no team member says so on the team page', async ({ page, lw }) => {
  const { task } = await lw.call('delegate_task', { objective: 'e2e: alone', name: 'alone', workspace: lw.repo, metadata: { mock: {} } });
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  await expect(page.getByTestId('detail-status')).toBeVisible();
  await expect(page.getByTestId('team-link')).toHaveCount(0);
  await page.goto(`${lw.url}#/teams/${task.id}`);
  await expect(page.locator('p.error')).toContainText(`task ${task.id} is not part of a team`);
});

test('New › Team starts a team and opens its view; a refused team names the field and starts nothing', async ({ page, lw, shot }) => {
  await linkReviewer(lw);
  const before = (await lw.call('list_tasks', { limit: 1000 })).tasks.length;
  await page.goto(`${lw.url}#/new`);
  await page.getByRole('tab', { name: 'Team' }).click();
  const form = page.getByRole('form', { name: 'team' });
  await expect(page.getByTestId('strategy-explain')).toContainText('another reviews it');
  // A file of its own: the implement_review test above accepted greet.txt into the shared repository,
  // so writing it again would change nothing and the reviewer would see no "+hello".
  await form.getByLabel('Objective').fill('write a greeting to welcome.txt');
  await form.getByLabel('Name').fill('team from the console');
  await form.getByLabel('Workspace (git repository)').fill(lw.repo);
  await form.getByLabel('Workers').fill('mock,mock');
  await form.getByLabel('Review rounds (at most)').fill('1');
  await form.getByLabel('Mode').selectOption('auto_execute');
  await form.getByLabel('Verify commands (one per line)').fill('test -s welcome.txt');
  await form.getByLabel('Metadata (JSON, worker-specific)').fill(JSON.stringify({ mock: { write_files: { 'welcome.txt': 'hello\n' } } }));
  await form.getByRole('button', { name: 'Start team' }).click();
  await expect(page.getByTestId('submit-error')).toHaveText('workers: the reviewer must be another worker than the implementer');
  expect((await lw.call('list_tasks', { limit: 1000 })).tasks.length).toBe(before);
  await shootEverySize(page, shot, 'team-new-refused');

  await form.getByLabel('Workers').fill('mock,reviewer');
  await form.getByRole('button', { name: 'Start team' }).click();
  await expect(page).toHaveURL(/#\/teams\/[0-9A-Z]+$/);
  const rootId = /#\/teams\/([0-9A-Z]+)$/.exec(page.url())![1];
  await expect(page.getByTestId('team-view').locator('h1')).toHaveText('Team · implement review');
  await expect(page.getByTestId('team-state')).toHaveText('passed', { timeout: 60_000 });
  await expect(page.getByTestId('team-rounds')).toHaveText('1 review round of at most 1');
  const r = await report(lw, rootId);
  expect(r.members.map((m: any) => [m.role, m.worker])).toEqual([['implement', 'mock'], ['review', 'reviewer']]);
  expect(r.budget).toBe(1);
});
