import { defineConfig } from '@playwright/test';
import { findChromium } from './test/e2e/chromium.js';

/**
 * Never downloads browsers (`npx playwright install` is not used): LIGHTWORKER_CHROMIUM, else the system
 * Chromium, else the one inside the @sparticuz/chromium npm package (test/e2e/chromium.ts).
 */
export const BROWSER = await findChromium();
export const HAS_CHROMIUM = BROWSER.path !== null;
/** Where the browser came from, or why none was found (for skip and failure messages). */
export const CHROMIUM = BROWSER.path ?? BROWSER.source;

const OUR_FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export default defineConfig({
  testDir: 'test/e2e',
  testMatch: '*.spec.ts',
  timeout: 90_000,
  expect: { timeout: 20_000 },
  fullyParallel: false,
  workers: 1,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1360, height: 860 },
    launchOptions: {
      ...(BROWSER.path ? { executablePath: BROWSER.path } : {}),
      args: [...new Set([...BROWSER.args, ...OUR_FLAGS])],
    },
    trace: 'off',
  },
});
