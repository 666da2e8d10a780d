import { spawn } from 'node:child_process';
import { delimiter as pathDelimiter } from 'node:path';

/**
 * A desktop app started from the Dock, Finder, a launcher or a .desktop file gets the session's bare
 * PATH (/usr/bin:/bin:…), not the one the user's shell profile builds — so `codex`, `claude` or a
 * Homebrew / nvm / npm-global `node` would not be found. This asks the user's login shell for its PATH
 * (once, bounded by a timeout) and adds what is missing. Plain Node; no 'electron'.
 */

const START = '__LIGHTWORKER_PATH_START__';
const END = '__LIGHTWORKER_PATH_END__';
/** Works in sh, bash, zsh and fish alike (no $(…), no printf format tricks). */
const SCRIPT = `echo ${START}; printenv PATH; echo ${END}`;

export type RunShell = (shell: string, args: string[], opts: { env: NodeJS.ProcessEnv; timeoutMs: number }) => Promise<string>;

/** The shell in its own process group, so a timeout kills whatever its profile started too. */
const runShell: RunShell = (shell, args, opts) =>
  new Promise((resolve, reject) => {
    const child = spawn(shell, args, { env: opts.env, stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      if (out.length < 4 * 1024 * 1024) out += d;
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      reject(new Error(`timed out after ${opts.timeoutMs} ms`));
    }, opts.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`exited with ${code}`));
    });
  });

/** The PATH between the markers of the shell's output (profile scripts may print banners around it). */
export function pathFromShellOutput(stdout: string): string | null {
  const s = stdout.lastIndexOf(START);
  const e = stdout.lastIndexOf(END);
  if (s === -1 || e < s) return null;
  const path = stdout.slice(s + START.length, e).trim();
  return path || null;
}

/**
 * `current` with every entry of `extra` that it lacks appended, in `extra`'s order. Never drops or
 * reorders an entry of `current` (merge, never shrink), and drops empty entries and duplicates.
 */
export function mergePath(current: string | undefined, extra: string | null, delimiter = pathDelimiter): string {
  const have = (current ?? '').split(delimiter).filter(Boolean);
  const seen = new Set(have);
  for (const p of (extra ?? '').split(delimiter)) {
    if (p && !seen.has(p)) {
      seen.add(p);
      have.push(p);
    }
  }
  return have.join(delimiter);
}

export interface LoginPathOptions {
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  /** Started from a terminal: its PATH is already the user's; nothing to do. */
  fromTerminal?: boolean;
  timeoutMs?: number;
  run?: RunShell;
}

export interface LoginPathResult {
  /** What happened, for the log: 'merged' (with `added`), or why nothing was done. */
  outcome: 'merged' | 'skipped' | 'failed';
  added: string[];
  detail: string;
}

/**
 * Extend `env.PATH` (in place) with the login shell's PATH: `$SHELL -ilc` with a marker, killed after
 * `timeoutMs` (a profile waiting for input must not hold the app's start). Windows (whose GUI apps get
 * the user's PATH already), a start from a terminal and `LIGHTWORKER_SHELL_PATH=0` skip it.
 */
export async function adoptLoginShellPath(opts: LoginPathOptions = {}): Promise<LoginPathResult> {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  if (platform === 'win32') return { outcome: 'skipped', added: [], detail: 'Windows apps inherit the user PATH' };
  if (env.LIGHTWORKER_SHELL_PATH === '0') return { outcome: 'skipped', added: [], detail: 'LIGHTWORKER_SHELL_PATH=0' };
  if (opts.fromTerminal ?? Boolean(process.stdin.isTTY || process.stdout.isTTY)) return { outcome: 'skipped', added: [], detail: 'started from a terminal' };
  const shell = env.SHELL || (platform === 'darwin' ? '/bin/zsh' : '/bin/sh');
  let stdout: string;
  try {
    // DISABLE_AUTO_UPDATE: oh-my-zsh would otherwise ask whether to update, and wait for an answer.
    stdout = await (opts.run ?? runShell)(shell, ['-ilc', SCRIPT], { env: { ...env, DISABLE_AUTO_UPDATE: 'true' }, timeoutMs: opts.timeoutMs ?? 5000 });
  } catch (err) {
    return { outcome: 'failed', added: [], detail: `${shell} -ilc: ${(err as Error).message.split('\n')[0]}` };
  }
  const fromShell = pathFromShellOutput(stdout);
  if (!fromShell) return { outcome: 'failed', added: [], detail: `${shell} printed no PATH` };
  const before = new Set((env.PATH ?? '').split(':').filter(Boolean));
  env.PATH = mergePath(env.PATH, fromShell, ':');
  const added = env.PATH.split(':').filter((p) => !before.has(p));
  return { outcome: 'merged', added, detail: added.length ? `added ${added.join(':')}` : 'nothing missing' };
}
