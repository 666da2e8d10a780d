/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { contrastDetail, contrastOf, noSidewaysScroll, openAt, WIDTHS } from './page-helpers.js';

// The console as a review page: the diff in both themes, verification per command, what a
// reviewer needs in the inbox, confirmations and feedback, the favicon and a layout that works at 800 px.

/** Click `button`, dismiss the confirmation it must raise, and check it asked with `question`. */
async function clickAndDismiss(page: Page, button: ReturnType<Page['locator']>, question: string): Promise<void> {
  let asked = '';
  page.once('dialog', (d) => {
    asked = d.message();
    void d.dismiss();
  });
  await button.click();
  await expect.poll(() => asked).toContain(question);
  await page.waitForTimeout(300);
}


/** The narrow top bar is one line: every page link (Packs, the last, too) on the row of the first, none scrolled out of view. */
async function navOnOneLine(page: Page, where: string): Promise<void> {
  const tops = await page.locator('nav.side a').evaluateAll((links) => links.map((a) => `${a.textContent!.trim()} ${(a as HTMLElement).offsetTop}`));
  expect(new Set(tops.map((x) => x.split(' ').pop())).size, `the top bar wraps on ${where}: ${tops.join(', ')}`).toBe(1);
  const [packs, bar] = await Promise.all([page.locator('nav.side a[data-page=packs]').boundingBox(), page.locator('nav.side .pages').boundingBox()]);
  expect(packs && bar && packs.x + packs.width <= bar.x + bar.width + 0.5, `Packs is cut off at 800 px on ${where}`).toBe(true);
}

async function waitEnded(lw: { call: (n: string, i?: unknown) => Promise<any> }, id: string): Promise<string> {
  let status = '';
  await expect
    .poll(async () => (status = (await lw.call('get_task', { id })).task.status), { timeout: 45_000 })
    .toMatch(/completed|failed|awaiting_approval|blocked/);
  return status;
}

test.describe('review page', () => {
  let diffTask = '';
  let verifyTask = '';

  test.beforeAll(async ({ lw }) => {
    const diff = await lw.call('delegate_task', {
      objective: 'write two files',
      name: 'diff review task',
      kind: 'execute',
      mode: 'auto_execute',
      workspace: lw.repo,
      metadata: { mock: { sleep_ms: 100, write_files: { 'hello.txt': 'hello from the mock worker\nsecond line\n', 'README.md': '# e2e repo, edited\n\nmore text\n' } } },
    });
    diffTask = diff.task.id;
    const verify = await lw.call('delegate_task', {
      objective: 'write a file and be verified',
      name: 'verified task',
      kind: 'execute',
      mode: 'auto_execute',
      workspace: lw.repo,
      verify: [['sh', '-c', 'echo line one; echo line two'], 'test -f notes.txt && echo notes present'],
      metadata: { mock: { sleep_ms: 100, write_files: { 'notes.txt': 'notes\n' } } },
    });
    verifyTask = verify.task.id;
    expect(await waitEnded(lw, diffTask)).toBe('completed');
    expect(await waitEnded(lw, verifyTask)).toBe('completed');
  });

  for (const width of WIDTHS) {
    for (const theme of ['light', 'dark'] as const) {
      test(`the diff is readable in the ${theme} theme at ${width} px`, async ({ page, lw, shot }) => {
        await openAt(page, lw.url, `#/tasks/${diffTask}`, width, theme);
        await expect(page.locator('.d2h-wrapper')).toBeVisible();
        await expect(page.locator('.d2h-file-name').first()).toBeVisible();
        // No colour trick (the old dark theme inverted a light diff into grey on grey).
        expect(await page.locator('.diff-body').evaluate((el) => getComputedStyle(el).filter)).toBe('none');
        for (const sel of ['.d2h-ins .d2h-code-line-ctn', '.d2h-del .d2h-code-line-ctn', '.d2h-cntx .d2h-code-line-ctn', '.d2h-file-name', '.d2h-code-linenumber', '.d2h-file-list-wrapper a']) {
          if (!(await page.locator(sel).count())) continue;
          const c = await contrastDetail(page, sel);
          expect(c.ratio, `contrast of ${sel} (${c.what}: rgb ${c.fg} on ${c.bg}) in ${theme}`).toBeGreaterThanOrEqual(4.5);
        }
        // Added and removed lines stand apart from context lines (their backgrounds differ).
        const bg = (sel: string) => page.locator(sel).first().evaluate((el) => getComputedStyle(el).backgroundColor);
        const [ins, del] = [await bg('td.d2h-ins'), await bg('td.d2h-del')];
        expect(ins).not.toBe(del);
        if (theme === 'dark') {
          // The diff's surface is dark too, not a white island in a dark page.
          const lightness = await contrastOf(page, '.d2h-file-header');
          expect(lightness).toBeGreaterThanOrEqual(4.5);
          const surface = await page.locator('.d2h-file-wrapper').first().evaluate((el) => getComputedStyle(el).backgroundColor);
          expect(surface).not.toBe('rgb(255, 255, 255)');
        }
        await page.getByLabel('side by side').check();
        await expect(page.locator('.d2h-file-side-diff').first()).toBeVisible();
        await noSidewaysScroll(page, width);
        await shot(page, `review-diff-${theme}-${width}`);
      });
    }

    test(`verification shows each command with its exit code, duration and output at ${width} px`, async ({ page, lw, shot }) => {
      for (const theme of ['light', 'dark'] as const) {
        await openAt(page, lw.url, `#/tasks/${verifyTask}`, width, theme);
        const cmds = page.getByTestId('verify-command');
        await expect(cmds).toHaveCount(2);
        await expect(cmds.nth(0).locator('code')).toHaveText('$ sh -c "echo line one; echo line two"');
        await expect(cmds.nth(0).getByTestId('verify-exit')).toHaveText('exit 0');
        await expect(cmds.nth(0)).toContainText(/\d+(\.\d)? (ms|s)/);
        // A real line break inside a <pre>, not the JSON escape.
        const out = await cmds.nth(0).locator('pre.verify-output').textContent();
        expect(out).toContain('line one\nline two');
        await expect(cmds.nth(1).locator('code')).toHaveText('$ test -f notes.txt && echo notes present');
        await expect(cmds.nth(1).locator('pre')).toHaveText(/notes present/);
        await expect(page.locator('.verify-run').first()).toContainText('passed');
        const card = page.locator('.card', { has: page.locator('h2', { hasText: 'Verification' }) });
        expect(await card.textContent()).not.toContain('\\n');
        expect(await contrastOf(page, 'pre.verify-output')).toBeGreaterThanOrEqual(4.5);
        await noSidewaysScroll(page, width);
        await shot(page, `review-verify-${theme}-${width}`);
      }
    });
  }

  test('a failed verification shows the failing command, its exit code and its stderr', async ({ page, lw, shot }) => {
    const { task } = await lw.call('delegate_task', {
      objective: 'be verified and fail',
      name: 'failing verification',
      kind: 'execute',
      mode: 'auto_execute',
      workspace: lw.repo,
      verify: ['echo checking; echo "problem: 2 tests failed" >&2; exit 3', 'echo never runs'],
      metadata: { mock: { sleep_ms: 50, write_files: { 'broken.txt': 'x\n' } } },
    });
    expect(await waitEnded(lw, task.id)).toBe('failed');
    for (const theme of ['light', 'dark'] as const) {
      await openAt(page, lw.url, `#/tasks/${task.id}`, 800, theme);
      const run = page.locator('.verify-run').first();
      await expect(run).toHaveAttribute('data-ok', 'false');
      await expect(run).toContainText('✗ failed');
      await expect(run).toContainText('1 of 2 commands');
      const cmd = run.getByTestId('verify-command');
      await expect(cmd).toHaveCount(1);
      await expect(cmd.getByTestId('verify-exit')).toHaveText('exit 3');
      expect(await cmd.locator('pre.verify-output').textContent()).toMatch(/checking\n(.|\n)*problem: 2 tests failed/);
      expect(await contrastOf(page, '[data-testid=verify-exit]')).toBeGreaterThanOrEqual(4.5);
      // The error quotes the output with its line breaks kept.
      expect(await page.locator('.error-card p').evaluate((el) => getComputedStyle(el).whiteSpace)).toBe('pre-wrap');
      await shot(page, `review-verify-failed-${theme}-800`);
    }
  });

  test('accept asks first: dismissing changes nothing, confirming accepts with a visible message', async ({ page, lw }) => {
    await openAt(page, lw.url, `#/tasks/${verifyTask}`, 1440, 'light');
    const status = page.getByTestId('detail-status');
    await expect(status).toHaveAttribute('data-status', 'completed');
    await clickAndDismiss(page, page.locator('button[data-action=accept]'), 'Accept "verified task"?');
    await expect(status).toHaveAttribute('data-status', 'completed');
    expect((await lw.call('get_task', { id: verifyTask })).task.status).toBe('completed');
    page.once('dialog', (d) => void d.accept());
    await page.locator('button[data-action=accept]').click();
    await expect(page.locator('.notice', { hasText: /Accepted: commit [0-9a-f]{10} on main/ })).toBeVisible();
    await expect(status).toHaveAttribute('data-status', 'accepted');
    expect(readFileSync(join(lw.repo, 'notes.txt'), 'utf8')).toBe('notes\n');
  });

  test('a task without verify commands is accepted from the console as unverified, after saying so', async ({ page, lw }) => {
    await openAt(page, lw.url, `#/tasks/${diffTask}`, 1440, 'dark');
    const status = page.getByTestId('detail-status');
    await expect(status).toHaveAttribute('data-status', 'completed');
    await clickAndDismiss(page, page.locator('button[data-action=accept]'), 'nothing checked its work');
    expect((await lw.call('get_task', { id: diffTask })).task.status).toBe('completed');
    page.once('dialog', (d) => void d.accept());
    await page.locator('button[data-action=accept]').click();
    await expect(page.locator('.notice', { hasText: /Accepted: commit [0-9a-f]{10}/ })).toBeVisible();
    await expect(status).toHaveAttribute('data-status', 'accepted');
    expect(readFileSync(join(lw.repo, 'hello.txt'), 'utf8')).toBe('hello from the mock worker\nsecond line\n');
    await expect(page.locator('.notice.error')).toHaveCount(0);
  });
});

test.describe('approval inbox', () => {
  for (const width of WIDTHS) {
    test(`a card shows verify commands, allowed paths, dependencies with status and the parent at ${width} px`, async ({ page, lw, shot }) => {
      const tag = `w${width}`;
      const parent = await lw.call('delegate_task', { objective: 'plan the work', name: `plan ${tag}`, workspace: lw.repo, metadata: { mock: { sleep_ms: 50 } } });
      await waitEnded(lw, parent.task.id);
      const dep = await lw.call('delegate_task', { objective: 'first step', name: `first step ${tag}`, workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 50 } } });
      const child = await lw.call('delegate_task', {
        objective: 'second step',
        name: `second step ${tag}`,
        kind: 'execute',
        mode: 'plan_only',
        workspace: lw.repo,
        parent_id: parent.task.id,
        depends_on: [dep.task.id],
        verify: [['npm', 'test'], 'npx tsc --noEmit'],
        allowed_paths: ['src/**', 'test/unit/**'],
        metadata: { mock: { sleep_ms: 50 } },
      });
      for (const theme of ['light', 'dark'] as const) {
        await openAt(page, lw.url, '#/inbox', width, theme);
        const card = page.locator(`li.card[data-task-id="${child.task.id}"]`);
        await expect(card).toBeVisible();
        await expect(card.getByTestId('review-verify').locator('li')).toHaveText(['npm test', 'npx tsc --noEmit']);
        await expect(card.getByTestId('review-paths').locator('li')).toHaveText(['src/**', 'test/unit/**']);
        const depRow = card.locator(`[data-dep-id="${dep.task.id}"]`);
        await expect(depRow).toContainText(`first step ${tag}`);
        await expect(depRow.locator('.badge')).toHaveAttribute('data-status', 'awaiting_approval');
        await expect(card.getByTestId('review-parent')).toContainText(`plan ${tag}`);
        await expect(card.getByTestId('review-parent').locator('.badge')).toHaveAttribute('data-status', 'completed');
        await noSidewaysScroll(page, width);
        await shot(page, `review-inbox-${theme}-${width}`);
      }
      // The task's own page shows the same facts.
      await page.goto(`${lw.url}#/tasks/${child.task.id}`);
      const review = page.getByTestId('review-card');
      await expect(review.getByTestId('review-verify').locator('li')).toHaveText(['npm test', 'npx tsc --noEmit']);
      await expect(review.locator(`[data-dep-id="${dep.task.id}"] .badge`)).toHaveAttribute('data-status', 'awaiting_approval');
      await expect(review.getByTestId('review-parent')).toContainText(`plan ${tag}`);
      await page.goto(`${lw.url}#/inbox`);
      // The dependency's status follows live: approving it turns its badge on the other card.
      const depRow = page.locator(`li.card[data-task-id="${child.task.id}"] [data-dep-id="${dep.task.id}"] .badge`);
      await page.locator(`li.card[data-task-id="${dep.task.id}"] button[data-action=approve]`).click();
      await expect(page.locator('.notice', { hasText: `Approved "first step ${tag}"` })).toBeVisible();
      await expect(depRow).not.toHaveAttribute('data-status', 'awaiting_approval', { timeout: 30_000 });
      // Clean up: reject the child (confirmed) so later tests see only their own cards.
      page.once('dialog', (d) => void d.accept());
      await page.locator(`li.card[data-task-id="${child.task.id}"] button[data-action=reject]`).click();
      await expect(page.locator(`li.card[data-task-id="${child.task.id}"]`)).toHaveCount(0);
    });
  }

  test('reject asks first; dismissing changes nothing; approve says so', async ({ page, lw }) => {
    const a = await lw.call('delegate_task', { objective: 'to reject', name: 'reject me', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 50 } } });
    const b = await lw.call('delegate_task', { objective: 'to approve', name: 'approve me', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 50 } } });
    await openAt(page, lw.url, '#/inbox', 1440, 'light');
    const cardA = page.locator(`li.card[data-task-id="${a.task.id}"]`);
    await clickAndDismiss(page, cardA.locator('button[data-action=reject]'), 'Reject "reject me"?');
    await expect(cardA).toBeVisible();
    expect((await lw.call('get_task', { id: a.task.id })).task.status).toBe('awaiting_approval');
    page.once('dialog', (d) => void d.accept());
    await cardA.locator('button[data-action=reject]').click();
    await expect(cardA).toHaveCount(0);
    await expect(page.locator('.notice', { hasText: 'Rejected "reject me"' })).toBeVisible();
    expect((await lw.call('get_task', { id: a.task.id })).task.status).toBe('cancelled');

    await page.locator(`li.card[data-task-id="${b.task.id}"] button[data-action=approve]`).click();
    await expect(page.locator('.notice', { hasText: 'Approved "approve me"' })).toBeVisible();
    await expect(page.locator(`li.card[data-task-id="${b.task.id}"]`)).toHaveCount(0);
    await waitEnded(lw, b.task.id);

    // Cancel on a task page asks too, and dismissing keeps the task as it was.
    const c = await lw.call('delegate_task', { objective: 'to keep', name: 'keep me', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 50 } } });
    await page.goto(`${lw.url}#/tasks/${c.task.id}`);
    await expect(page.getByTestId('detail-status')).toHaveAttribute('data-status', 'awaiting_approval');
    await clickAndDismiss(page, page.locator('button[data-action=cancel]'), 'Cancel this task?');
    expect((await lw.call('get_task', { id: c.task.id })).task.status).toBe('awaiting_approval');
    // Approve on the task page gives feedback as well.
    await page.locator('button[data-action=approve]').click();
    await expect(page.locator('.notice', { hasText: 'Approved: the task is queued' })).toBeVisible();
  });

  test('Retry is offered only where the engine retries: failed yes; completed, blocked and awaiting approval no', async ({ page, lw }) => {
    const done = await lw.call('delegate_task', { objective: 'done already', name: 'finished', workspace: lw.repo, metadata: { mock: { sleep_ms: 50 } } });
    const failed = await lw.call('delegate_task', { objective: 'fails', name: 'fails', workspace: lw.repo, metadata: { mock: { sleep_ms: 50, fail_message: 'broken on purpose' } } });
    const blocked = await lw.call('delegate_task', { objective: 'after the failure', name: 'blocked by it', workspace: lw.repo, depends_on: [failed.task.id], metadata: { mock: { sleep_ms: 50 } } });
    const waiting = await lw.call('delegate_task', { objective: 'waits', name: 'waits', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 50 } } });
    expect(await waitEnded(lw, done.task.id)).toBe('completed');
    expect(await waitEnded(lw, failed.task.id)).toBe('failed');
    expect(await waitEnded(lw, blocked.task.id)).toBe('blocked');
    for (const [id, enabled] of [[done.task.id, false], [blocked.task.id, false], [waiting.task.id, false], [failed.task.id, true]] as const) {
      await page.goto(`${lw.url}#/tasks/${id}`);
      await expect(page.getByTestId('detail-status')).toHaveAttribute('data-status', (await lw.call('get_task', { id })).task.status);
      const retry = page.locator('button[data-action=retry]');
      if (enabled) await expect(retry).toBeEnabled();
      else await expect(retry).toBeDisabled();
    }
    // The engine agrees: a completed task is not retried, a failed one is.
    await expect(lw.call('retry_task', { id: done.task.id })).rejects.toThrow(/completed/);
    await page.locator('button[data-action=retry]').click();
    await expect(page.locator('.notice', { hasText: 'Retry queued' })).toBeVisible();
    expect((await lw.call('get_task', { id: failed.task.id })).task.attempt).toBe(2);
  });

  test('a disabled Approve is the quietest button, in both themes', async ({ page, lw, shot }) => {
    // A failed task: Approve is disabled, Retry enabled (the engine retries failed tasks).
    const t = await lw.call('delegate_task', { objective: 'failed already', name: 'failed', workspace: lw.repo, metadata: { mock: { sleep_ms: 50, fail_message: 'broken on purpose' } } });
    expect(await waitEnded(lw, t.task.id)).toBe('failed');
    for (const theme of ['light', 'dark'] as const) {
      await openAt(page, lw.url, `#/tasks/${t.task.id}`, 1440, theme);
      const approve = page.locator('button[data-action=approve]');
      await expect(approve).toBeDisabled();
      const retry = page.locator('button[data-action=retry]');
      await expect(retry).toBeEnabled();
      const look = (sel: string) =>
        page.locator(sel).evaluate((el) => {
          const s = getComputedStyle(el);
          return { bg: s.backgroundColor, color: s.color, accent: getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() };
        });
      const a = await look('button[data-action=approve]');
      // No filled accent background: a disabled button is drawn transparent, in the muted text colour.
      expect(a.bg).toBe('rgba(0, 0, 0, 0)');
      const muted = await page.evaluate(() => {
        const probe = document.createElement('span');
        probe.style.color = 'var(--fg-muted)';
        document.body.append(probe);
        const c = getComputedStyle(probe).color;
        probe.remove();
        return c;
      });
      expect(a.color).toBe(muted);
      // An enabled button stays more prominent than the disabled one.
      expect(await contrastOf(page, 'button[data-action=retry]')).toBeGreaterThan(await contrastOf(page, 'button[data-action=approve]'));
      await shot(page, `review-disabled-${theme}`);
    }
  });
});

test('the favicon is linked and served', async ({ page, lw }) => {
  await page.goto(`${lw.url}#/tasks`);
  await expect(page.locator('link[rel=icon]')).toHaveCount(1);
  const href = await page.locator('link[rel=icon]').evaluate((el) => (el as HTMLLinkElement).href);
  const res = await page.request.get(href);
  expect(res.status()).toBe(200);
  expect(res.headers()['content-type']).toMatch(/image\/(svg\+xml|png|x-icon)/);
  expect((await res.body()).length).toBeGreaterThan(50);
});

test('every page fits 800 px without sideways scrolling; the side bar stacks above the content', async ({ page, lw, shot }) => {
  const t = await lw.call('delegate_task', {
    objective: 'a long objective '.repeat(40),
    name: 'a task with a rather long name that should be truncated in narrow windows rather than widening the page',
    workspace: lw.repo,
    metadata: { mock: { sleep_ms: 50 } },
  });
  await waitEnded(lw, t.task.id);
  for (const theme of ['light', 'dark'] as const) {
    for (const hash of ['#/tasks', '#/inbox', '#/new', '#/settings', '#/doctor', '#/cache', `#/tasks/${t.task.id}`]) {
      await openAt(page, lw.url, hash, 800, theme);
      await expect(page.locator('main.content > *').first()).toBeVisible();
      await page.waitForTimeout(150);
      await noSidewaysScroll(page, 800);
      const nav = await page.locator('nav.side').boundingBox();
      const main = await page.locator('main.content').boundingBox();
      expect(nav && main && nav.y + nav.height <= main.y + 1, `the side bar is above the content on ${hash}`).toBe(true);
      await navOnOneLine(page, hash);
      // …and the page starts right below it (no stretched empty band on short pages).
      const first = await page.locator('main.content > *').first().boundingBox();
      expect(first && nav && first.y - (nav.y + nav.height), `gap above the content on ${hash}`).toBeLessThan(60);
      await shot(page, `narrow-${hash.replace(/[#/]+/g, '-').replace(/^-|-$/g, '').slice(0, 20)}-${theme}-800`);
    }
  }
  // With a count beside Approvals (a question waits), the bar still holds every link on its line.
  const { task: asking } = await lw.call('delegate_task', {
    objective: 'asks', name: 'asks', workspace: lw.repo, kind: 'execute', mode: 'auto_execute',
    metadata: { mock: { result: { summary: 'need input', files_changed: [], notes: null, escalation: { type: 'question', text: 'Which one?', options: ['a', 'b'], command: null, scope: null, reason: 'unsaid' } } } },
  });
  await expect.poll(async () => (await lw.call('get_task', { id: asking.id })).task.status, { timeout: 30_000 }).toBe('waiting_input');
  await openAt(page, lw.url, '#/tasks', 800, 'light');
  await expect(page.getByTestId('inbox-count')).toBeVisible();
  await navOnOneLine(page, '#/tasks with a question waiting');
  await noSidewaysScroll(page, 800);
  await lw.call('cancel_task', { id: asking.id });
  // At 1440 the side bar sits beside the content.
  await openAt(page, lw.url, '#/tasks', 1440, 'light');
  const nav = await page.locator('nav.side').boundingBox();
  const main = await page.locator('main.content').boundingBox();
  expect(nav && main && nav.x + nav.width <= main.x + 1).toBe(true);
  await noSidewaysScroll(page, 1440);
  await shot(page, 'wide-tasks-light-1440');
});
