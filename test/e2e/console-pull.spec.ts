/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from './fixtures.js';
import { openAt, shootEverySize } from './page-helpers.js';
import { FORGE_REPO, startScriptedForge, type ScriptedForge } from '../fixtures/forge/scripted-forge.js';

// The review page of a task: comments on diff lines sent as one follow-up turn, then a pull request
// opened from the card, watched by serve (the leader) through a failing check to the forge's merge.
const TOKEN_ENV = 'LW_E2E_FORGE_TOKEN';
const TOKEN = 'lwe2e_Q7rT2mX9kP4vB8nZ';
// serve starts (the worker-scoped fixture) after this module loads: it inherits the variable.
process.env[TOKEN_ENV] = TOKEN;

test.describe.serial('review comments and the pull request card', () => {
  let forge: ScriptedForge;
  let id = '';

  test.beforeAll(async ({ lw }) => {
    const bare = join(lw.home, '..', 'origin.git');
    execFileSync('git', ['clone', '-q', '--bare', lw.repo, bare]);
    execFileSync('git', ['remote', 'add', 'origin', `file://${bare}`], { cwd: lw.repo });
    forge = await startScriptedForge({ bare, token: TOKEN });
    // ci/style fails while app.js still declares with `var` (what the local verify does not check).
    forge.checksFor = (sha) => {
      const text = execFileSync('git', ['--git-dir', bare, 'show', `${sha}:app.js`], { encoding: 'utf8' });
      return [{ name: 'ci/style', state: text.includes('var ') ? 'failure' : 'success', log: text.includes('var ') ? 'app.js:1 error: use const, not var (no-var)\n' : 'ok\n' }];
    };
    writeFileSync(
      join(lw.home, 'config.toml'),
      `[pr]\npoll_s = 0.2\nmax_poll_s = 1\n[forges.local]\nkind = "github"\nmatch = "file://"\napi_url = "${forge.api.github}"\ntoken_env = "${TOKEN_ENV}"\nrepo = "${FORGE_REPO}"\n`,
    );
    const r = await lw.call('delegate_task', {
      objective: 'add app.js',
      name: 'Add app',
      kind: 'execute',
      mode: 'auto_execute',
      workspace: lw.repo,
      verify: [['node', '-e', 'process.exit(0)']],
      metadata: {
        mock: {
          sleep_ms: 100,
          write_files: { 'app.js': 'var a = 1;\n// TODO\nmodule.exports = a;\n' },
          when: [
            { prompt_includes: 'drop the TODO', write_files: { 'app.js': 'var a = 1;\nmodule.exports = a;\n' } },
            { prompt_includes: 'ci/style', write_files: { 'app.js': 'const a = 1;\nmodule.exports = a;\n' } },
          ],
        },
      },
    });
    id = r.task.id;
    await expect.poll(async () => (await lw.call('get_task', { id })).task.status, { timeout: 45_000 }).toBe('completed');
  });

  test.afterAll(async () => {
    await forge?.close();
  });

  test('a comment on a diff line shows inline, and the review goes out as one follow-up turn', async ({ page, lw, shot }) => {
    await openAt(page, lw.url, `#/tasks/${id}`, 1440, 'light');
    const line = page.locator('.d2h-file-wrapper', { hasText: 'app.js' }).locator('tr', { has: page.locator('.line-num2', { hasText: /^\s*2\s*$/ }) });
    await line.click();
    await expect(page.getByTestId('comment-form')).toContainText('Comment on app.js line 2');
    await page.getByTestId('comment-text').fill('drop the TODO, it is done');
    await page.locator('[data-action="add-comment"]').click();
    const inline = page.getByTestId('inline-comment');
    await expect(inline).toContainText('drop the TODO, it is done');
    await expect(inline).toContainText('not sent yet');
    await expect(page.locator('[data-action="send-review"]')).toHaveText('Send review (1)');
    await shootEverySize(page, shot, 'review-inline-comment');
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.locator('[data-action="send-review"]').click();
    await expect.poll(async () => (await lw.call('get_task', { id })).task, { timeout: 45_000 }).toMatchObject({ attempt: 2, status: 'completed' });
    await expect(page.getByTestId('inline-comment')).toContainText('sent as attempt 2', { timeout: 15_000 });
    const review = await lw.call('list_review_comments', { id });
    expect(review.comments).toMatchObject([{ file: 'app.js', line: 2, quoted: ['// TODO'], sentAs: 2 }]);
  });

  test('the PR card opens a draft PR, follows the failing check to the pushed fix, and shows the merge', async ({ page, lw, shot }) => {
    await openAt(page, lw.url, `#/tasks/${id}`, 1440, 'light');
    const card = page.getByTestId('pull-card');
    await expect(card.locator('[data-action="open-pull"]')).toBeEnabled();
    await card.getByTestId('pull-branch').fill('feature/app');
    await card.locator('[data-action="open-pull"]').click();
    await expect(card).toContainText('#1');
    await expect(card).toContainText('feature/app');
    expect(forge.pulls[0]).toMatchObject({ head: 'feature/app', draft: true, title: 'Add app' });
    // serve leads: its watcher sends ci/style's failure back, the fix is verified and pushed, the check passes.
    await expect.poll(async () => (await lw.call('get_pull_request', { id })).pull, { timeout: 60_000 }).toMatchObject({ checks: 'passing', fixRounds: 1, fixing: false });
    await expect(card.getByTestId('pull-state')).toHaveText('checks passing', { timeout: 15_000 });
    await shootEverySize(page, shot, 'review-pull-passing');
    forge.merge(1);
    await expect(card.getByTestId('pull-state')).toHaveText('merged', { timeout: 30_000 });
    await shootEverySize(page, shot, 'review-pull-merged');
  });
});
