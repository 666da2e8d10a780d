import { chromium } from '@playwright/test';
import { describe, expect, it } from 'vitest';
import { findChromium } from '../e2e/chromium.js';

// The console tests on a fresh machine: without a system Chromium (or with LIGHTWORKER_CHROMIUM pointing
// nowhere) they fall back to the browser inside the @sparticuz/chromium npm package, and it really runs.
describe('findChromium', () => {
  it('an existing LIGHTWORKER_CHROMIUM wins', async () => {
    const c = await findChromium({ LIGHTWORKER_CHROMIUM: process.execPath }, '/nowhere/chromium');
    expect(c).toEqual({ path: process.execPath, args: [], source: 'LIGHTWORKER_CHROMIUM' });
  });

  it('LIGHTWORKER_CHROMIUM pointing nowhere and no system browser: the npm build, which launches and renders a page', async () => {
    const c = await findChromium({ LIGHTWORKER_CHROMIUM: '/nowhere/chrome' }, '/nowhere/chromium');
    expect(c.source).toBe('@sparticuz/chromium');
    expect(c.path).toMatch(/chromium/);
    // Flags that would switch off what the security spec checks are not passed on.
    expect(c.args.some((a) => /disable-web-security|single-process/.test(a))).toBe(false);
    const browser = await chromium.launch({ executablePath: c.path!, args: [...c.args, '--no-sandbox'], headless: true });
    try {
      const page = await browser.newPage();
      await page.setContent('<p id="x">rendered</p>');
      expect(await page.locator('#x').textContent()).toBe('rendered');
    } finally {
      await browser.close();
    }
  });

  it('LIGHTWORKER_CHROMIUM=@sparticuz/chromium picks the npm build even with a system browser', async () => {
    const c = await findChromium({ LIGHTWORKER_CHROMIUM: '@sparticuz/chromium' }, process.execPath);
    expect(c.source).toBe('@sparticuz/chromium');
  });
});
