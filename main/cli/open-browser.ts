import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { err } from './output.js';

/** The page that forwards the browser to the tokened URL; HTML-escaped because it lands in an attribute. */
export function redirectPage(loginUrl: string): string {
  const href = loginUrl.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"><title>LightWorker</title></head>\n<body><p>Opening the <a href="${href}">LightWorker console</a> …</p></body></html>\n`;
}

/**
 * Open the console in the user's browser without putting the token on a command line: any local user
 * can read another's argv (`ps`), so the browser gets a `file://` page, readable only by this user
 * (0600), that redirects to the tokened URL — as Jupyter does. The page is removed when serve exits.
 */
export function openBrowser(loginUrl: string, dir: string): void {
  const file = join(dir, `console-open-${process.pid}.html`);
  try {
    rmSync(file, { force: true });
    writeFileSync(file, redirectPage(loginUrl), { mode: 0o600, flag: 'wx' });
  } catch (e) {
    err(`could not write ${file} (${(e as Error).message}); open the URL above yourself`);
    return;
  }
  process.once('exit', () => rmSync(file, { force: true }));
  const target = pathToFileURL(file).href;
  const [cmd, args] =
    process.platform === 'darwin' ? ['open', [target]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '', target]] : ['xdg-open', [target]];
  try {
    const child = spawn(cmd, args as string[], { detached: true, stdio: 'ignore' });
    child.on('error', () => err(`could not open a browser (${cmd}); open the URL above yourself`));
    child.unref();
  } catch {
    err('could not open a browser; open the URL above yourself');
  }
}
