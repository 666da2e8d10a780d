import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { minimalEnv } from './env.js';

/**
 * Asking a binary for its version without letting it touch anything of the caller's: the command runs
 * in an empty temporary folder that is also its HOME (and config homes), with the minimal worker
 * environment (no caller secrets, no repository above it for git to find), in its own process group that
 * is killed at the end, under a short timeout, reading at most {@link OUTPUT_CAP} bytes.
 *
 * Looking at workers is frequent (every `workers`, `doctor`, console page, MCP `run_doctor`) and each probe
 * starts a process (a Node CLI costs ~0.1–1 s of CPU), so answers are cached per binary — its real path,
 * size, mtime and inode, and the arguments — for {@link CACHE_MS} (a failure for {@link FAILURE_CACHE_MS}),
 * at most {@link MAX_RUNNING} probes run at once, callers asking for the same probe share one run, and a
 * caller waits at most `waitMs`: past that it hears "still probing" while the probe goes on to fill the cache.
 */

/** How long an answer is reused (a new install changes size/mtime and is probed at once). */
export const CACHE_MS = 10 * 60_000;
/** A probe that failed or timed out is retried after this long. */
export const FAILURE_CACHE_MS = 60_000;
/** Probes running at once in this process (the built-in CLIs and git probe in one round); more wait their turn. */
export const MAX_RUNNING = 4;
/** Default hard limit of one probe (then its process group is killed). */
export const PROBE_TIMEOUT_MS = 5_000;
/** Default longest a caller waits for a probe, queueing included. */
export const PROBE_WAIT_MS = 6_000;
/** Bytes of stdout read from a probe; the rest is not read. */
export const OUTPUT_CAP = 16 * 1024;

/** A version probe's answer: the first line of its stdout, or why there is none. */
export type VersionProbe = { line: string; unknown: null } | { line: null; unknown: string };

interface Entry {
  at: number;
  done: boolean;
  failed: boolean;
  result: Promise<VersionProbe>;
}

const cache = new Map<string, Entry>();
/**
 * Two lanes: version probes (a quick `--version`), and the slow ones that start an agent to ask it
 * something (an ACP agent's `initialize` takes a Node CLI's whole start-up): each lane has its own slots,
 * so a round of agent starts never holds a version probe past its caller's wait.
 */
export type ProbeLane = 'version' | 'agent';
const LANE_SLOTS: Record<ProbeLane, number> = { version: MAX_RUNNING, agent: 2 };
const running: Record<ProbeLane, number> = { version: 0, agent: 0 };
const queues: Record<ProbeLane, (() => void)[]> = { version: [], agent: [] };

/** Variables that keep a CLI's config, caches and update checks inside the probe's folder. */
function probeEnv(dir: string): Record<string, string> {
  return minimalEnv({
    HOME: dir,
    CODEX_HOME: dir,
    CLAUDE_CONFIG_DIR: join(dir, '.claude'),
    XDG_CONFIG_HOME: join(dir, '.config'),
    XDG_DATA_HOME: join(dir, '.local', 'share'),
    XDG_CACHE_HOME: join(dir, '.cache'),
    XDG_STATE_HOME: join(dir, '.local', 'state'),
    // git run by the probe finds no repository above its empty folder, whatever TMPDIR is.
    GIT_CEILING_DIRECTORIES: dirname(dir),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
  });
}

/** Kill a probe's whole process group (it may have started children); gone already is fine. */
function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    if (process.platform === 'win32') process.kill(pid, 'SIGKILL');
    else process.kill(-pid, 'SIGKILL');
  } catch {
    // nothing left
  }
}

/** Run `bin args` once under the probe rules. */
function runProbe(bin: string, args: readonly string[], timeoutMs: number): Promise<VersionProbe> {
  const dir = mkdtempSync(join(tmpdir(), 'lw-probe-'));
  return new Promise<VersionProbe>((resolve) => {
    let out = '';
    let bytes = 0;
    let timedOut = false;
    let settled = false;
    const child = spawn(bin, [...args], { cwd: dir, env: probeEnv(dir), stdio: ['ignore', 'pipe', 'ignore'], detached: process.platform !== 'win32', windowsHide: true });
    const finish = (why: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killGroup(child.pid);
      child.stdout?.destroy();
      rmSync(dir, { recursive: true, force: true });
      const line = out.trim().split('\n')[0]?.trim().slice(0, 200);
      if (why === null && line) resolve({ line, unknown: null });
      else resolve({ line: null, unknown: why ?? 'it printed nothing' });
    };
    const timer = setTimeout(() => {
      timedOut = true;
      finish(`it did not answer within ${timeoutMs} ms`);
    }, timeoutMs);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (d: string) => {
      if (bytes >= OUTPUT_CAP) return;
      out += d.slice(0, OUTPUT_CAP - bytes);
      bytes += d.length;
      if (bytes >= OUTPUT_CAP) finish(null);
    });
    child.on('error', (err) => finish(`it could not start: ${err.message}`));
    // On exit, not close: a child it left holding stdout must not keep the probe open.
    child.on('exit', (code, signal) => {
      if (timedOut) return;
      setImmediate(() => finish(code === 0 ? null : `it exited with ${signal ?? `code ${code}`}`));
    });
  });
}

function acquire(lane: ProbeLane): Promise<void> {
  if (running[lane] < LANE_SLOTS[lane]) {
    running[lane]++;
    return Promise.resolve();
  }
  return new Promise((resolve) => queues[lane].push(() => (running[lane]++, resolve())));
}

function release(lane: ProbeLane): void {
  running[lane]--;
  queues[lane].shift()?.();
}

/** The cache key: what makes a new answer possible (another binary at that path, other arguments). */
function keyOf(bin: string, args: readonly string[]): string | null {
  try {
    const real = realpathSync(bin);
    const st = statSync(real);
    return JSON.stringify([real, st.size, st.mtimeMs, st.ino, args]);
  } catch {
    return null;
  }
}

/**
 * `bin args` (a version command) under the probe rules, cached and bounded (see the module comment).
 * Resolves within about `waitMs`; never rejects.
 */
export function probeVersionLine(bin: string, args: readonly string[], opts: { timeoutMs?: number; waitMs?: number; lane?: ProbeLane } = {}): Promise<VersionProbe> {
  const lane = opts.lane ?? 'version';
  const key = keyOf(bin, args);
  if (!key) return Promise.resolve({ line: null, unknown: `${bin} is not there` });
  const now = Date.now();
  let entry = cache.get(key);
  if (entry && entry.done && now - entry.at > (entry.failed ? FAILURE_CACHE_MS : CACHE_MS)) entry = undefined;
  if (!entry) {
    const fresh: Entry = { at: now, done: false, failed: false, result: Promise.resolve({ line: null, unknown: 'not probed' }) };
    fresh.result = acquire(lane).then(async () => {
      try {
        const r = await runProbe(bin, args, opts.timeoutMs ?? PROBE_TIMEOUT_MS);
        Object.assign(fresh, { at: Date.now(), done: true, failed: r.line === null });
        return r;
      } finally {
        release(lane);
      }
    });
    cache.set(key, fresh);
    entry = fresh;
  }
  if (entry.done) return entry.result;
  // A caller that allows a longer probe than the default also waits for it.
  const waitMs = opts.waitMs ?? Math.max(PROBE_WAIT_MS, (opts.timeoutMs ?? 0) + 1000);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ line: null, unknown: `still probing after ${waitMs} ms (ask again shortly)` }), waitMs);
    timer.unref?.();
    void entry.result.then((r) => {
      clearTimeout(timer);
      resolve(r);
    });
  });
}

/** Forget every cached answer (tests; a person who just reinstalled a CLI in place with the same mtime). */
export function clearProbeCache(): void {
  cache.clear();
}
