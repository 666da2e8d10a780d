import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

/** System Chromium only: this project never downloads browsers (`npx playwright install` is not used). */
export const CHROMIUM = process.env.LIGHTWORKER_CHROMIUM ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);

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
      ...(HAS_CHROMIUM ? { executablePath: CHROMIUM } : {}),
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
    trace: 'off',
  },
});
