import { existsSync } from 'node:fs';

/** The browser the console tests run in, and where it came from. */
export interface ChromiumChoice {
  /** Absolute path of the executable, or null when none was found. */
  path: string | null;
  /** Flags the browser needs beyond ours (the npm build's own flags). */
  args: string[];
  /** `LIGHTWORKER_CHROMIUM`, `system` or `@sparticuz/chromium`; or why nothing was found. */
  source: string;
}

export const SYSTEM_CHROMIUM = '/usr/bin/chromium';
const PACKAGED = '@sparticuz/chromium';

/**
 * Flags of @sparticuz/chromium's list that would change what the tests check: they turn off the
 * same-origin policy (the security spec checks CORS and Origin handling) and site isolation.
 * `--single-process` goes too: several browser contexts in one test need their own processes.
 */
const DROPPED_FLAGS = /^--(disable-web-security|allow-running-insecure-content|disable-site-isolation-trials|disable-features=|single-process|headless)/;

/**
 * Find a Chromium without downloading anything: `LIGHTWORKER_CHROMIUM` if it exists, else the system's
 * (`/usr/bin/chromium`, apt), else the headless build shipped inside the `@sparticuz/chromium` npm
 * package (extracted once to /tmp/chromium), so `npm install && npm test` runs the console tests on a
 * fresh machine. Never throws: a missing browser comes back as `path: null` with the reasons.
 */
export async function findChromium(env: NodeJS.ProcessEnv = process.env, system = SYSTEM_CHROMIUM): Promise<ChromiumChoice> {
  const tried: string[] = [];
  const wanted = env.LIGHTWORKER_CHROMIUM;
  // `LIGHTWORKER_CHROMIUM=@sparticuz/chromium` picks the npm build even where a system one exists.
  const packagedOnly = wanted === PACKAGED;
  if (wanted && !packagedOnly) {
    if (existsSync(wanted)) return { path: wanted, args: [], source: 'LIGHTWORKER_CHROMIUM' };
    tried.push(`LIGHTWORKER_CHROMIUM=${wanted} does not exist`);
  }
  if (!packagedOnly && existsSync(system)) return { path: system, args: [], source: 'system' };
  tried.push(`no ${system}`);
  try {
    const { default: chromium } = await import('@sparticuz/chromium');
    const path = await chromium.executablePath();
    if (path && existsSync(path)) return { path, args: chromium.args.filter((a) => !DROPPED_FLAGS.test(a)), source: PACKAGED };
    tried.push(`${PACKAGED} extracted nothing`);
  } catch (err) {
    tried.push(`${PACKAGED}: ${(err as Error).message}`);
  }
  return { path: null, args: [], source: tried.join('; ') };
}
