import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** How the spawner helper (spawner.ts) is started, and what it says it can contain trees with. */

/** What the running helper contains its trees with (Linux): a cgroup base directory, a child subreaper. */
export interface Containment {
  cgroup: string | null;
  subreaper: boolean;
}

// Python cannot read inside the packaged app's asar archive: its helper files are unpacked beside it.
const HELPER_PY = fileURLToPath(new URL('./spawner-helper.py', import.meta.url)).replace(/app\.asar([\\/])/, 'app.asar.unpacked$1');

/** The command that runs the helper (spawner-helper.py, which documents the protocol). */
export interface HelperCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/**
 * The python3 to run: `LIGHTWORKER_PYTHON`, else the system's own where it is (a version manager's shim on
 * PATH, e.g. pyenv's, costs 80 ms of CPU in shell scripts before Python starts), else `python3` on PATH.
 */
export function pythonCommand(): string {
  if (process.env.LIGHTWORKER_PYTHON) return process.env.LIGHTWORKER_PYTHON;
  return ['/usr/bin/python3', '/usr/local/bin/python3', '/opt/homebrew/bin/python3'].find((p) => existsSync(p)) ?? 'python3';
}

/** What python3 needs to be found and run (a pyenv shim reads HOME): PATH, HOME, a UTF-8 locale; nothing else. */
function pythonEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
  if (process.env.HOME) env.HOME = process.env.HOME;
  return env;
}

/**
 * The helper in Python: its subprocess starts a process with vfork, so a start costs about 1.2 ms of CPU
 * against 2.5–3.4 ms through a Node helper and 3.6–4.4 ms forking from the leader (300 starts of /bin/true);
 * a 60-task drain took 23.8 ms of CPU per task against 34.0 (Node helper, 47 MiB against 12) and 31.7 (none).
 * python3 (pythonCommand) runs isolated (-I: no user site, no environment variables; -S: no site module;
 * -B: no __pycache__ written beside the helper, which may sit in a read-only app). Where it cannot run (no
 * python3, one older than 3.8), the leader spawns directly (spawner.ts).
 */
export function helperCommand(): HelperCommand {
  // LIGHTWORKER_CGROUP=0: no cgroup per tree (the subreaper alone), e.g. where cgroup writes misbehave.
  const noCgroup = process.env.LIGHTWORKER_CGROUP === '0' ? ['--no-cgroup'] : [];
  return { command: pythonCommand(), args: ['-I', '-S', '-B', HELPER_PY, ...noCgroup], env: pythonEnv(), cwd: dirname(HELPER_PY) };
}

/** The helper's `ready` payload: how it contains trees (JSON). */
export function readyPayload(payload: Buffer): Containment {
  try {
    const r = JSON.parse(payload.toString('utf8')) as Partial<Containment>;
    return { cgroup: typeof r.cgroup === 'string' ? r.cgroup : null, subreaper: r.subreaper === true };
  } catch {
    return { cgroup: null, subreaper: false };
  }
}
