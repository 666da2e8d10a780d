/// <reference lib="dom" />
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

// The team options that were CLI/MCP only, started from New › Team: map_reduce with contributors that
// change code and a synthesizer of its own, and an integration of finished tasks; each refused first
// (the engine's words on the field it names, nothing created), then seen through in the team view.

type Lw = { call: (name: string, input?: unknown) => Promise<any>; repo: string; url: string };

const scratch = mkdtempSync(join(tmpdir(), 'lw-team-more-'));
test.afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const count = async (lw: Lw) => (await lw.call('list_tasks', { limit: 1000 })).tasks.length as number;

async function openTeamForm(page: Page, lw: Lw, strategy: string) {
  await page.goto(`${lw.url}#/new`);
  await page.getByRole('tab', { name: 'Team' }).click();
  const form = page.getByRole('form', { name: 'team' });
  await form.getByLabel('Strategy').selectOption({ label: strategy });
  return form;
}

/** A synthesizer CLI: writes combined.txt with the contributions' added lines it was shown, in its worktree. */
async function linkSynthesizer(lw: Lw): Promise<void> {
  const script = join(scratch, 'synth.mjs');
  writeFileSync(script, `import { readFileSync, writeFileSync } from 'node:fs';
const prompt = readFileSync(0, 'utf8');
const seen = ['alpha', 'beta'].filter((w) => new RegExp('^\\\\+' + w + '$', 'm').test(prompt));
writeFileSync('combined.txt', seen.join('\\n') + '\\n');
console.log(JSON.stringify({ summary: 'combined ' + seen.join(' and '), files_changed: ['combined.txt'], notes: null }));
`);
  await lw.call('link_worker', { name: 'synth', command_json: [process.execPath, script] });
}

test('map_reduce from New: contributors that change code, a synthesizer of its own; an unknown synthesizer is refused at its field', async ({ page, lw, shot }) => {
  await linkSynthesizer(lw);
  const before = await count(lw);
  const form = await openTeamForm(page, lw, 'map, then reduce');
  await expect(page.getByTestId('strategy-explain')).toContainText('a synthesizer combines them');
  await form.getByLabel('Objective', { exact: true }).fill('write the two halves');
  await form.getByLabel('Name', { exact: true }).fill('halves');
  await form.getByLabel('Workspace (git repository)').fill(lw.repo);
  await form.getByLabel('Workers', { exact: true }).fill('mock');
  await form.getByLabel('Synthesizer').fill('nosuch');
  await form.getByLabel('Contributors').selectOption('execute');
  await form.getByLabel('Mode').selectOption('auto_execute');
  await form.getByLabel(/^Parts/).fill('write alpha.txt\nwrite beta.txt');
  const mock = { when: [{ prompt_includes: 'write alpha.txt', write_files: { 'alpha.txt': 'alpha\n' } }, { prompt_includes: 'write beta.txt', write_files: { 'beta.txt': 'beta\n' } }] };
  await form.getByLabel('Metadata (JSON, worker-specific)').fill(JSON.stringify({ mock }));
  await form.getByRole('button', { name: 'Start team' }).click();

  // The engine's refusal names the synthesizer (not the member task it would have become), on that field.
  await expect(page.getByTestId('submit-error')).toContainText('synthesizer: unknown worker "nosuch"');
  const synth = form.locator('input[name=synthesizer]');
  await expect(synth).toHaveAttribute('aria-invalid', 'true');
  await expect(synth).toBeFocused();
  expect(await synth.evaluate((el) => el.closest('label')!.dataset.error)).toMatch(/^unknown worker "nosuch"/);
  expect(await count(lw)).toBe(before);
  await shootEverySize(page, shot, 'team-new-map-reduce-refused');

  // Editing the field clears the mark; the fixed team starts and opens its view.
  await synth.fill('synth');
  await expect(synth).not.toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('submit-error')).toHaveCount(0);
  await form.getByRole('button', { name: 'Start team' }).click();
  await expect(page).toHaveURL(/#\/teams\/[0-9A-Z]+$/);
  const rootId = /#\/teams\/([0-9A-Z]+)$/.exec(page.url())![1];
  const view = page.getByTestId('team-view');
  await expect(view.locator('h1')).toHaveText('Team · map reduce');
  await expect(page.getByTestId('team-state')).toHaveText('completed', { timeout: 60_000 });
  await expect(page.getByTestId('team-synthesizer')).toHaveText('synth');
  await expect(page.getByTestId('team-contribute')).toHaveText('each contributor changes code in its own worktree; the synthesis writes one change from theirs');
  await expect(view.locator('tr[data-role=contribute] [data-field=kind]')).toHaveText([' · changes code', ' · changes code']);
  const synthRow = view.locator('tr[data-role=synthesize]');
  await expect(synthRow).toContainText('synthesis');
  await expect(synthRow.locator('td').nth(1)).toHaveText('synth');
  // The synthesizer really was shown both contributions' diffs.
  await expect(synthRow.locator('[data-field=verdict]')).toHaveText('combined alpha and beta');
  await expect(page.locator('button[data-action=accept-team]')).toBeEnabled();
  const r = await lw.call('team_report', { id: rootId });
  expect(r.members.map((m: any) => [m.role, m.kind, m.worker])).toEqual([['contribute', 'execute', 'mock'], ['contribute', 'execute', 'mock'], ['synthesize', 'execute', 'synth']]);
  await shootEverySize(page, shot, 'team-view-map-reduce');
});

test('integrate from New: pick finished execute tasks, too few is refused at Sources, then the merge and its verification show in the team view', async ({ page, lw, shot }) => {
  const source = async (file: string) =>
    (await lw.call('delegate_task', { objective: `write ${file}`, name: `write ${file}`, workspace: lw.repo, kind: 'execute', mode: 'auto_execute', verify: [`test -f ${file}`], metadata: { mock: { write_files: { [file]: `${file}\n` } } } })).task.id as string;
  const a = await source('one.txt');
  const b = await source('two.txt');
  for (const id of [a, b]) await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 60_000 }).toBe('completed');
  const before = await count(lw);

  const form = await openTeamForm(page, lw, 'integrate finished tasks');
  await expect(page.getByTestId('strategy-explain')).toContainText('merges the verified commits');
  // No workers, no required objective or workspace: an integration takes its sources'.
  await expect(form.getByLabel('Workers', { exact: true })).toHaveCount(0);
  await expect(form.getByLabel('Workspace (optional: the sources’ repository)')).not.toHaveAttribute('required', '');
  await form.getByLabel('Name', { exact: true }).fill('both files');
  const offered = page.getByTestId('integrate-offered');
  await offered.locator(`button[data-task-id="${a}"]`).click();
  const sources = form.locator('textarea[name=sources]');
  await expect(sources).toHaveValue(a);
  await expect(offered.locator(`button[data-task-id="${a}"]`)).toHaveCount(0);
  await form.getByRole('button', { name: 'Start integration' }).click();
  await expect(page.getByTestId('submit-error')).toContainText('sources: Too small: expected array to have >=2 items');
  await expect(sources).toHaveAttribute('aria-invalid', 'true');
  expect(await count(lw)).toBe(before);

  await offered.locator(`button[data-task-id="${b}"]`).click();
  await expect(sources).toHaveValue(`${a}\n${b}`);
  await expect(sources).not.toHaveAttribute('aria-invalid', 'true');
  // The default mode asks a person first: the team view says the merge waits for that approval.
  await form.getByRole('button', { name: 'Start integration' }).click();
  await expect(page).toHaveURL(/#\/teams\/[0-9A-Z]+$/);
  const id = /#\/teams\/([0-9A-Z]+)$/.exec(page.url())![1];
  const view = page.getByTestId('team-view');
  await expect(view.locator('h1')).toHaveText('Team · integrate');
  await expect(page.getByTestId('team-integration')).toHaveText('the 2 sources are done: the merge waits for your approval');
  await expect(view.locator('tr[data-role=integrate] [data-status]')).toHaveText('awaiting approval');
  await lw.call('approve_task', { id });
  await expect(page.getByTestId('team-state')).toHaveText('completed', { timeout: 60_000 });
  await expect(page.getByTestId('team-integration')).toHaveText('merged 2 of 2 sources onto one branch, verified');
  await expect(view.locator('tr[data-source-id]')).toHaveCount(2);
  for (const s of [a, b]) await expect(view.locator(`tr[data-source-id="${s}"] [data-field=merged]`)).toHaveText(/^commit [0-9a-f]{10}$/);
  await expect(view.locator('tr[data-source-id]').first()).toContainText('write one.txt');
  await expect(view.locator('tr[data-role=integrate]')).toContainText('integration');
  await expect(view.locator('tr[data-role=integrate] [data-field=verdict]')).toHaveText(`merged 2 verified task commits: ${a}, ${b}`);
  const it = (await lw.call('get_task', { id })).task;
  expect(it.workspace).toBe((await lw.call('get_task', { id: a })).task.workspace);
  expect(it.verify).toEqual(['test -f one.txt', 'test -f two.txt']);
  expect((await lw.call('team_report', { id })).sources.map((s: any) => s.id)).toEqual([a, b]);
  await shootEverySize(page, shot, 'team-view-integrate');

  // Accept team takes the integration (the team's own root, not the source tree it sits in): both files land.
  await page.locator('button[data-action=accept-team]').click();
  await expect(page.getByTestId('team-confirm')).toContainText('integration · lightworker becomes one commit in your branch.');
  await page.getByTestId('team-confirm').locator('button[data-action=confirm-team]').click();
  await expect(page.getByTestId('team-outcome')).toHaveText(new RegExp(`^Accepted the team's result \\(${id}\\): commit [0-9a-f]{10}`));
  expect(readFileSync(join(lw.repo, 'one.txt'), 'utf8')).toBe('one.txt\n');
  expect(readFileSync(join(lw.repo, 'two.txt'), 'utf8')).toBe('two.txt\n');
});

test('an integration whose sources change one file differently says which source conflicts, on which file, and takes nothing', async ({ page, lw }) => {
  const source = async (text: string) =>
    (await lw.call('delegate_task', { objective: `write clash.txt: ${text}`, name: `clash ${text}`, workspace: lw.repo, kind: 'execute', mode: 'auto_execute', metadata: { mock: { write_files: { 'clash.txt': `${text}\n` } } } })).task.id as string;
  const a = await source('from a');
  const b = await source('from b');
  for (const id of [a, b]) await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 60_000 }).toBe('completed');
  const form = await openTeamForm(page, lw, 'integrate finished tasks');
  await form.locator('textarea[name=sources]').fill(`${a}\n${b}`);
  await form.getByLabel('Mode').selectOption('auto_execute');
  await form.getByRole('button', { name: 'Start integration' }).click();
  await expect(page).toHaveURL(/#\/teams\/[0-9A-Z]+$/);
  await expect(page.getByTestId('team-state')).toHaveText('merge conflict', { timeout: 60_000 });
  await expect(page.getByTestId('team-state-words')).toHaveText('the sources conflict');
  await expect(page.getByTestId('team-integration')).toHaveText('1 of 2 sources conflict; nothing was integrated and your branch is untouched');
  await expect(page.locator(`tr[data-source-id="${a}"] [data-field=merged]`)).toHaveText(/^commit [0-9a-f]{10}$/);
  await expect(page.locator(`tr[data-source-id="${b}"] [data-field=merged]`)).toHaveText('conflicts in clash.txt');
  await expect(page.locator('button[data-action=accept-team]')).toBeDisabled();
});
