/// <reference lib="dom" />
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from './fixtures.js';
import { shootEverySize } from './page-helpers.js';

// The Context Packs page: add (pasted text or a file), view (text, versions), add a version, remove with
// a confirmation — each step visible on the page and true in the engine.

const packsOf = async (lw: { call: (n: string) => Promise<any> }) => ((await lw.call('list_context_packs')).packs as { name: string; version: string }[]).map((p) => `${p.name}@${p.version}`).sort();

test.afterEach(async ({ lw }) => {
  for (const ref of await packsOf(lw)) await lw.call('remove_context_pack', { name: ref } as never).catch(() => undefined);
});

test('add, view, version and remove a context pack from its page', async ({ page, lw, shot }) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${lw.url}#/tasks`);
  await page.locator('nav.side a[data-page=packs]').click();
  await expect(page.getByTestId('no-packs')).toBeVisible();

  // Pasted text.
  await page.locator('input[name=name]').fill('house-rules');
  await page.locator('textarea[name=text]').fill('Use tabs.\nWrite tests first.\n');
  await page.locator('button[data-action=add-pack]').click();
  await expect(page.getByText('Added house-rules@1')).toBeVisible();
  await expect(page.getByTestId('pack-text')).toHaveText('Use tabs.\nWrite tests first.\n');
  expect(await packsOf(lw)).toEqual(['house-rules@1']);

  // From a file on the engine's machine.
  const file = join(lw.home, 'style.md');
  writeFileSync(file, 'Short names.\n');
  await page.getByLabel('Read a file on the machine LightWorker runs on').check();
  await page.locator('input[name=name]').fill('style');
  await page.locator('input[name=file]').fill(file);
  await page.locator('button[data-action=add-pack]').click();
  await expect(page.getByText('Added style@1')).toBeVisible();
  await expect(page.getByTestId('pack-list').locator('tr[data-pack]')).toHaveCount(2);

  // A new version of house-rules, edited from the current text.
  await page.locator('tr[data-pack=house-rules]').click();
  await expect(page.locator('form[aria-label="new version"] input[name=version]')).toHaveValue('2');
  await page.locator('form[aria-label="new version"] textarea[name=text]').fill('Use tabs.\nWrite tests first.\nNo force-push.\n');
  await page.locator('button[data-action=add-version]').click();
  await expect(page.getByText('Added house-rules@2')).toBeVisible();
  await expect(page.getByTestId('pack-versions').locator('tr[data-version]')).toHaveCount(2);
  await expect(page.getByTestId('pack-text')).toContainText('No force-push.');
  expect((await lw.call('get_context_pack', { name: 'house-rules' })).version).toBe('2');

  // After a reload the list and versions are the engine's.
  await page.reload();
  await expect(page.locator('tr[data-pack=house-rules] td').nth(2)).toHaveText('2');
  await page.locator('tr[data-pack=house-rules]').click();
  await page.locator('tr[data-version="1"]').click();
  await expect(page.getByTestId('pack-text')).not.toContainText('No force-push.');
  await page.locator('tr[data-version="2"]').click();
  await shootEverySize(page, shot, 'packs-page');

  // Remove one version: asked first; declining keeps it.
  page.once('dialog', (d) => void d.dismiss());
  await page.locator('button[aria-label="remove version 1"]').click();
  await expect(page.getByTestId('pack-versions').locator('tr[data-version]')).toHaveCount(2);
  expect(await packsOf(lw)).toEqual(['house-rules@1', 'house-rules@2', 'style@1']);
  page.once('dialog', (d) => {
    expect(d.message()).toContain('Remove house-rules@1?');
    void d.accept();
  });
  await page.locator('button[aria-label="remove version 1"]').click();
  await expect(page.getByText('Removed house-rules@1')).toBeVisible();
  await expect(page.getByTestId('pack-versions').locator('tr[data-version]')).toHaveCount(1);
  // Remove the whole pack.
  page.once('dialog', (d) => void d.accept());
  await page.locator('button[data-action=remove-pack]').click();
  await expect(page.getByTestId('pack-list').locator('tr[data-pack]')).toHaveCount(1);
  await expect(page.getByTestId('pack-detail')).toHaveCount(0);
  expect(await packsOf(lw)).toEqual(['style@1']);
});

test('a bad pack is refused at its field, and a pack a queued task uses is not removed', async ({ page, lw, shot }) => {
  await page.setViewportSize({ width: 800, height: 900 });
  await page.goto(`${lw.url}#/packs`);
  // The page's own check, then the engine's, each at the field it names.
  await page.locator('button[data-action=add-pack]').click();
  await expect(page.locator('input[name=name]')).toHaveAttribute('aria-invalid', 'true');
  await page.locator('input[name=name]').fill('bad name');
  await page.locator('textarea[name=text]').fill('Some rules');
  await page.locator('button[data-action=add-pack]').click();
  await expect(page.getByTestId('add-error')).toContainText('name: letters, digits, . _ -');
  await expect(page.locator('input[name=name]')).toHaveAttribute('aria-invalid', 'true');
  await page.locator('input[name=name]').fill('keys');
  await page.locator('textarea[name=text]').fill('token: ghp_abcdefghijklmnopqrstuvwxyz0123456789AB');
  await page.locator('button[data-action=add-pack]').click();
  await expect(page.getByTestId('add-error')).toContainText('looks like it contains a credential');
  await expect(page.locator('textarea[name=text]')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.locator('textarea[name=text]')).toBeFocused();
  await shootEverySize(page, shot, 'packs-refused');
  expect(await packsOf(lw)).toEqual([]);

  // A version is immutable: the same label with other text is refused at the version field.
  await lw.call('add_context_pack', { name: 'house', version: '1', text: 'v1' } as never);
  await page.reload();
  await page.locator('tr[data-pack=house]').click();
  const versionForm = page.locator('form[aria-label="new version"]');
  await versionForm.locator('input[name=version]').fill('1');
  await versionForm.locator('textarea[name=text]').fill('other text');
  await page.locator('button[data-action=add-version]').click();
  await expect(page.getByTestId('version-error')).toContainText('already exists with other text');
  await expect(versionForm.locator('input[name=version]')).toHaveAttribute('aria-invalid', 'true');

  // A queued task is pinned to house@1: removing it is refused, saying which task.
  const { task } = await lw.call('delegate_task', { objective: 'look', workspace: lw.repo, context_pack: 'house', mode: 'plan_only' } as never);
  page.once('dialog', (d) => void d.accept());
  await page.locator('button[data-action=remove-pack]').click();
  await expect(page.getByText(`pinned by 1 task(s) that have not ended (${task.id})`)).toBeVisible();
  expect(await packsOf(lw)).toEqual(['house@1']);
  await lw.call('cancel_task', { id: task.id } as never);
});
