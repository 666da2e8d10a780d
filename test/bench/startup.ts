// Start-up figures (CLI start-up time), as medians and as ratios to `node -e 0` measured in the same rounds:
// CLI cold start (`--version`, `tasks --json` on a home of LIGHTWORKER_BENCH_TASKS tasks, default 10k),
// `lightworker mcp` spawn → initialize answered, and `npm start` → console URL with a current build.
// Rounds interleave the commands so machine load hits them alike. LIGHTWORKER_BENCH_RUNS sets the rounds.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ensureBuild } from '../../scripts/build-state.js';
import { LightWorker } from '../../main/lib/index.js';
import { makeRepo } from '../helpers/env.js';
import { StdioChild } from '../integration/mcp.helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin', 'lightworker.js');

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Wall time of one process run to exit, in ms. */
function timeRun(args: string[], env: NodeJS.ProcessEnv): number {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr.toString().slice(0, 500)}`);
  return ms;
}

/** `npm start` (scripts/start.js) until it prints the console URL, in ms. */
function timeStart(env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((done, fail) => {
    const t = performance.now();
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'start.js'), '--port', '0', '--no-open'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/LightWorker console: http/.test(out)) {
        const ms = performance.now() - t;
        child.once('exit', () => done(ms));
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      if (!/LightWorker console: http/.test(out)) fail(new Error(`npm start exited (${code}) before the console URL: ${err.slice(0, 500)}`));
    });
  });
}

async function populate(home: string, repo: string, n: number): Promise<void> {
  const lw = await LightWorker.open({ home, lead: false });
  try {
    for (let done = 0; done < n; done += 100) {
      const tasks = Array.from({ length: Math.min(100, n - done) }, (_, i) => ({ objective: `bench task ${done + i}`, workspace: repo, kind: 'explore' as const }));
      await lw.delegateBatch({ tasks });
    }
  } finally {
    await lw.close();
  }
}

export async function run(): Promise<Record<string, number | string>> {
  await ensureBuild();
  const n = Number(process.env.LIGHTWORKER_BENCH_TASKS ?? 10_000);
  const rounds = Number(process.env.LIGHTWORKER_BENCH_RUNS ?? 15);
  const dir = mkdtempSync(join(tmpdir(), 'lw-bench-startup-'));
  try {
    const home = join(dir, 'home');
    await populate(home, makeRepo(join(dir, 'repo')), n);
    // Nothing leads this home (its tasks stay queued); `mcp` and `npm start` get an empty home of their
    // own, since they would start running these tasks.
    const idle = join(dir, 'home-idle');
    const env = { ...process.env, LIGHTWORKER_HOME: home };
    const installed = { ...env, LIGHTWORKER_NO_BUILD_CHECK: '1' }; // an installed package has no sources to check
    const t: Record<string, number[]> = { node: [], version: [], tasks: [], tasksCheckout: [], mcp: [], start: [] };
    for (let i = 0; i < rounds; i++) {
      t.node.push(timeRun(['-e', '0'], env));
      t.version.push(timeRun([BIN, '--version'], installed));
      t.tasks.push(timeRun([BIN, 'tasks', '--json'], installed));
      t.tasksCheckout.push(timeRun([BIN, 'tasks', '--json'], env));
      const s = performance.now();
      const c = new StdioChild(idle, { LIGHTWORKER_NO_BUILD_CHECK: '1' });
      await c.initialize();
      t.mcp.push(performance.now() - s);
      await c.stop();
    }
    for (let i = 0; i < Math.min(rounds, 5); i++) t.start.push(await timeStart({ ...process.env, LIGHTWORKER_HOME: idle }));
    const base = median(t.node);
    return {
      tasks_in_home: n,
      rounds,
      'node -e 0, ms (median)': base,
      '--version, ms': median(t.version),
      '--version / node': median(t.version) / base,
      'tasks --json, ms': median(t.tasks),
      'tasks --json / node': median(t.tasks) / base,
      'tasks --json in a checkout (source hash check), ms': median(t.tasksCheckout),
      'mcp spawn → initialize, ms': median(t.mcp),
      'npm start → console URL, ms': median(t.start),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `node bin/run-ts.js test/bench/startup.ts` runs it alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const figures = await run();
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(52)} ${typeof v === 'number' ? Number(v.toFixed(3)) : v}\n`);
  process.stdout.write(JSON.stringify(figures) + '\n');
  process.exit(0);
}
