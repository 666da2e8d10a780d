/// <reference lib="dom" />
import { expect, test } from './fixtures.js';

test('an error after Save shows beside Save and at the field it names, scrolled into view', async ({ page, lw }) => {
  await page.setViewportSize({ width: 800, height: 600 });
  await page.goto(`${lw.url}#/settings`);
  const fast = page.locator('input[name="models.fast"]');
  await expect(fast).toBeVisible();
  const before = (await lw.call('get_settings')).config.models.fast;
  await fast.fill('no-such-model');
  // The person scrolls down to Save, at the bottom of the form, and clicks it.
  const save = page.locator('button[data-action=save-settings]');
  await save.scrollIntoViewIfNeeded();
  await expect(fast).not.toBeInViewport();
  await save.click();
  // Where they clicked: the error, beside the button.
  const near = page.getByTestId('save-error');
  await expect(near).toContainText('models.fast: "no-such-model" is not in models.allow');
  // And the page goes to the field, marked and focused, with the same words under it.
  await expect(fast).toBeInViewport();
  await expect(fast).toBeFocused();
  await expect(fast).toHaveAttribute('aria-invalid', 'true');
  const under = await fast.evaluate((el) => el.closest('label')?.dataset.error ?? '');
  expect(under).toContain('"no-such-model" is not in models.allow');
  expect((await lw.call('get_settings')).config.models.fast).toBe(before);
  // Editing the field clears the mark.
  await fast.fill(before);
  await expect(fast).not.toHaveAttribute('aria-invalid', 'true');
  await save.click();
  await expect(page.getByText('Settings saved')).toBeVisible();
  await expect(near).toHaveCount(0);
});
