import { homedir, tmpdir } from 'node:os';
import { pickEnv } from '../platform/proc/env.js';

/** Variables a worker may inherit from LightWorker's own environment. Nothing else is passed. */
const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TERM', 'TZ', 'TMPDIR', 'SYSTEMROOT', 'COMSPEC', 'PATHEXT', 'WINDIR'];

/**
 * The minimal environment every worker starts from: PATH, HOME, locale, temp dir, plus the task's
 * identity and delegation depth. LightWorker's own tokens and any other secret in the parent
 * environment never reach a worker; a gateway's key is added by the adapter that needs it.
 * (Setup and verify commands get an even shorter list: `commandEnv` in platform/proc/bounded-run.ts.)
 */
export function minimalEnv(extra: Record<string, string> = {}, parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env = pickEnv(INHERITED, parent);
  env.HOME ??= homedir();
  env.TMPDIR ??= tmpdir();
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return { ...env, ...extra };
}
