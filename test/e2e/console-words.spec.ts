/// <reference lib="dom" />
import { expect, test } from './fixtures.js';

type Lw = { call: (name: string, input?: unknown) => Promise<any>; repo: string };

async function finished(lw: Lw, name: string, usage: { input: number; cached: number; output: number }): Promise<string> {
  const { task } = await lw.call('delegate_task', { objective: `words: ${name}`, name, workspace: lw.repo, metadata: { mock: { usage } } });
  await expect.poll(async () => (await lw.call('get_task', { id: task.id })).task.status, { timeout: 30_000 }).toBe('completed');
  return task.id as string;
}

test('Cache Lab speaks in sentences with units, not field names', async ({ page, lw }) => {
  await finished(lw, 'cache one', { input: 1000, cached: 0, output: 10 });
  await finished(lw, 'cache two', { input: 1000, cached: 800, output: 10 });
  const m = await lw.call('get_cache_metrics', {});
  await page.goto(`${lw.url}#/cache`);
  const target = page.getByTestId('cache-target');
  await expect(target).toContainText(`Target: ${(m.target.rate * 100).toFixed(1)}% of input tokens from the cache, judged on ${m.target.minSamples} warm samples within ${m.target.windowMinutes} minutes`);
  if (m.target.status === 'insufficient_samples') await expect(target).toContainText(`${m.target.remainingSamples} more warm samples needed`);
  const summary = page.getByTestId('cache-summary');
  await expect(summary.locator('[data-key=overall]')).toHaveText(`All turns: ${(m.overall.hitRate * 100).toFixed(1)}% of ${m.overall.inputTokens.toLocaleString('en-US')} input tokens came from the cache, over ${m.overall.samples} samples.`);
  await expect(summary.locator('[data-key=samples]')).toContainText(`usage samples in the last ${m.window.minutes} minutes`);
  await expect(page.getByTestId('cohorts')).toContainText('warm sample');
  // No field name of the command's answer reaches the page, and a rate never shows as a bare 0.
  const text = await page.locator('main').innerText();
  for (const field of ['minSamples', 'remainingSamples', 'hitRate', 'warmSamples', 'insufficient_samples', 'not_exposed']) expect(text).not.toContain(field);
  expect(text).not.toMatch(/\b0\s+0\.0%/);
});

test("a task's Events card reads as sentences, with the raw payload one click away", async ({ page, lw }) => {
  const id = await finished(lw, 'events in words', { input: 1200, cached: 300, output: 40 });
  await page.goto(`${lw.url}#/tasks/${id}`);
  const status = page.locator('.events li[data-type="task.status"]').first();
  await expect(status.locator('[data-field=line]')).toHaveText('Status queued → starting');
  const usage = page.locator('.events li[data-type="worker.usage"]').first();
  await expect(usage.locator('[data-field=line]')).toHaveText('Used 1,200 input tokens (300 from the cache) and 40 output tokens');
  const raw = status.locator('details.raw pre');
  await expect(raw).toBeHidden();
  await status.locator('details.raw summary').click();
  await expect(raw).toBeVisible();
  await expect(raw).toContainText('"to": "starting"');
});

test('Doctor counts its warnings instead of saying all passed above them', async ({ page, lw }) => {
  const r = await lw.call('run_doctor');
  const failed = r.checks.filter((c: { ok: boolean; optional?: boolean }) => !c.ok && !c.optional).length;
  const warnings = r.checks.filter((c: { ok: boolean; optional?: boolean }) => !c.ok && c.optional).length;
  await page.goto(`${lw.url}#/doctor`);
  await page.locator('button[data-action=run-doctor]').click();
  const summary = page.getByTestId('doctor-summary');
  await expect(summary).toBeVisible();
  if (!failed && !warnings) await expect(summary).toHaveText(`All ${r.checks.length} checks passed.`);
  else {
    await expect(summary).not.toContainText('All');
    if (warnings) await expect(summary).toContainText(`${warnings} warning${warnings === 1 ? '' : 's'}`);
    if (failed) await expect(summary).toContainText(`${failed} check${failed === 1 ? '' : 's'} failed`);
  }
  console.info(`doctor here: ${failed} failed, ${warnings} warnings of ${r.checks.length}`);
});
