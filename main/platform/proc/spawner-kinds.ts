import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Which spawner helper runs (spawner.ts), how it is started, and what it says it can contain trees with. */

/** What the running helper contains its trees with (Linux): a cgroup base directory, a child subreaper. */
export interface Containment {
  cgroup: string | null;
  subreaper: boolean;
}

const HELPER = fileURLToPath(new URL('./spawner-helper.mjs', import.meta.url));
// Python cannot read inside the packaged app's asar archive: its helper files are unpacked beside it.
const HELPER_PY = fileURLToPath(new URL('./spawner-helper.py', import.meta.url)).replace(/app\.asar([\\/])/, 'app.asar.unpacked$1');
/**
 * The helper's live data is a few frames and its work is system calls: a small young generation, one V8 worker
 * thread, no optimizing compiler (45 MiB RSS instead of 52, 0.85 ms CPU per fork instead of 0.95).
 */
const HELPER_FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1', '--no-opt'];

/** One way to run the helper: the same protocol from Python (spawner-helper.py) or from Node (spawner-helper.mjs). */
export interface HelperKind {
  name: 'python' | 'node';
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
 * The helpers to try, in order. Python first where its file is there: its subprocess starts a process with vfork,
 * 0.43 ms of the helper's CPU per start against 1.23 ms with Node's fork (300 starts through the protocol), paid
 * for every worker turn and git call (measured in a 200-task drain, npm run bench). python3 (pythonCommand) runs isolated (-I: no user site, no
 * environment variables; -S: no site module; -B: no __pycache__ written beside the helper, which may sit in a read-only app). A helper that cannot run (no python3, an exit before it says ready)
 * gives way to the next one; Node's always can. `LIGHTWORKER_SPAWNER=node` or `=python` chooses one.
 */
export function helperKinds(): HelperKind[] {
  const choice = process.env.LIGHTWORKER_SPAWNER;
  const node: HelperKind = { name: 'node', command: process.execPath, args: [...HELPER_FLAGS, HELPER], env: process.versions.electron ? { ELECTRON_RUN_AS_NODE: '1' } : {}, cwd: dirname(HELPER) };
  // LIGHTWORKER_CGROUP=0: no cgroup per tree (the subreaper alone), e.g. where cgroup writes misbehave.
  const noCgroup = process.env.LIGHTWORKER_CGROUP === '0' ? ['--no-cgroup'] : [];
  const python: HelperKind = { name: 'python', command: pythonCommand(), args: ['-I', '-S', '-B', HELPER_PY, ...noCgroup], env: pythonEnv(), cwd: dirname(HELPER_PY) };
  if (choice === 'node') return [node];
  if (choice === 'python') return [python];
  return existsSync(HELPER_PY) ? [python, node] : [node];
}

/** The helper's `ready`: the Python one says how it contains trees (JSON), the Node one just 'ready'. */
export function readyPayload(payload: Buffer): Containment {
  try {
    const r = JSON.parse(payload.toString('utf8')) as Partial<Containment>;
    return { cgroup: typeof r.cgroup === 'string' ? r.cgroup : null, subreaper: r.subreaper === true };
  } catch {
    return { cgroup: null, subreaper: false };
  }
}
