import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test as base, type Page } from '@playwright/test';
import { HAS_CHROMIUM, CHROMIUM } from '../../playwright.config.js';
import { ROOT, startConsole, type ConsoleServer } from './console-server.js';

const SHOTS = join(ROOT, 'test', 'e2e', 'screenshots');

/**
 * One `serve` per worker, on a temp home; every spec skips (saying why) without a system Chromium.
 * Each page starts signed in, as a user who opened the URL serve printed.
 */
export const test = base.extend<{ shot: (page: Page, name: string) => Promise<void> }, { lw: ConsoleServer }>({
  lw: [
    async ({}, use) => {
      const server = await startConsole();
      await use(server);
      await server.stop();
    },
    { scope: 'worker', timeout: 90_000 },
  ],
  page: async ({ page, lw }, use) => {
    await page.goto(lw.loginUrl);
    await use(page);
  },
  shot: async ({}, use) => {
    mkdirSync(SHOTS, { recursive: true });
    await use(async (page, name) => {
      await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    });
  },
});

test.beforeEach(() => {
  // Under CI a missing browser is a broken install (the npm package ships one), not a reason to skip.
  if (!HAS_CHROMIUM && process.env.CI === 'true') throw new Error(`no Chromium under CI=true: ${CHROMIUM}`);
  if (!HAS_CHROMIUM) process.stderr.write(`skipping: no Chromium (${CHROMIUM}); apt-get install -y chromium, or npm install (@sparticuz/chromium)\n`);
  test.skip(!HAS_CHROMIUM, `no Chromium: ${CHROMIUM}`);
});

export { expect } from '@playwright/test';
