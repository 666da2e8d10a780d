import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { prepareWorkspace } from '../../main/isolation/workspace.js';
import { runBounded } from '../../main/platform/proc/bounded-run.js';
import { spawnBackgroundRunner } from '../../main/scheduler/background.js';
import { treeMarkerEnv } from '../../main/platform/proc/marker.js';
import { sweepTree } from '../../main/platform/proc/sweep.js';
import { processStartTime } from '../../main/platform/proc/process.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { isAlive, until } from '../helpers/procs.js';
import { git, newExecuteTask, simulateRun, writeIn } from './isolation.helpers.js';
import { killMarked, linux, pidFrom } from './lifecycle.helpers.js';

// Setup and verify commands are trees like a worker's: what they leave behind is swept, escaped
// descendants included (they carry the task marker); and a sweep touches nothing that is not the tree's.
let h: TestHome | null = null;
const strays: ChildProcess[] = [];
afterEach(() => {
  for (const c of strays.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (h && linux) killMarked(h.engine.home.root);
  h?.cleanup();
  h = null;
});

/** A shell line that starts an escaped (own session), SIGTERM-ignoring sleep and records its pid in `file`. */
const escapeLine = (file: string) => `setsid sh -c 'trap "" TERM; echo $$ > ${file}; exec sleep 600' & echo started`;

function stray(env: Record<string, string>, detached = true): ChildProcess {
  const c = spawn('sleep', ['600'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: 'ignore', detached });
  strays.push(c);
  return c;
}

describe.skipIf(!linux)('escaped descendants of setup and verify commands (Linux: found by marker)', () => {
  it('a verify command that escapes with setsid keeps its verdict; the escaped process is killed', async () => {
    h = makeHome();
    const file = join(h.root, 'esc.pid');
    const t = await newExecuteTask(h, { verify: [['sh', '-c', escapeLine(file)]] });
    const run = await simulateRun(h, t, () => {});
    expect(run.verify!.ok).toBe(true);
    expect(isAlive(await pidFrom(file))).toBe(false);
  });

  it('a setup command that escapes with setsid is swept once setup is over', async () => {
    h = makeHome();
    const file = join(h.root, 'setup-esc.pid');
    writeIn(h.repo, { '.lightworker/setup.toml': `setup = ${JSON.stringify(escapeLine(file))}\n` });
    git(h.repo, 'add', '.lightworker/setup.toml');
    git(h.repo, 'commit', '-qm', 'setup');
    const t = await newExecuteTask(h);
    await prepareWorkspace(h.engine, t);
    expect(isAlive(await pidFrom(file))).toBe(false);
  });
});
if (!linux) console.log('skipped escaped-descendant command tests: finding escaped processes by marker needs /proc (Linux)');

describe('a sweep kills only its own tree', () => {
  it('never signals a recycled PID: a live process whose start time differs from the recorded one', async () => {
    const other = stray({});
    await until(() => processStartTime(other.pid!) !== null, 5000, 'the process to start');
    expect(await sweepTree({ pid: other.pid!, startTime: 'recorded-for-another-process', marker: null }, 100)).toBe(0);
    expect(isAlive(other.pid!)).toBe(true);
  });

  it.skipIf(!linux)('kills by marker only an exact match of task, attempt and home', async () => {
    const mine = treeMarkerEnv('/tmp/lw-home-a', '01TESTTASK', 1);
    const victim = stray(mine);
    const retry = stray(treeMarkerEnv('/tmp/lw-home-a', '01TESTTASK', 2));
    const otherHome = stray(treeMarkerEnv('/tmp/lw-home-b', '01TESTTASK', 1));
    const noHome = stray({ LIGHTWORKER_TASK_ID: '01TESTTASK', LIGHTWORKER_ATTEMPT: '1' });
    for (const c of strays) await until(() => processStartTime(c.pid!) !== null, 5000, 'the processes to start');
    // Give exec a moment to replace the environ of the forked child with sleep's.
    await until(() => readFileSync(`/proc/${victim.pid}/environ`, 'latin1').includes('01TESTTASK'), 5000, 'the marked environ');
    expect(await sweepTree({ pid: -1, startTime: null, marker: mine }, 100)).toBe(1);
    expect(isAlive(victim.pid!)).toBe(false);
    expect([retry, otherHome, noHome].map((c) => isAlive(c.pid!))).toEqual([true, true, true]);
  });

  it('a leftover that ignores SIGTERM gets it exactly once (a second one means "force quit" to many servers), then SIGKILL', async () => {
    h = makeHome();
    const counter = join(h.root, 'counter.cjs');
    const log = join(h.root, 'terms.log');
    writeFileSync(counter, `process.on('SIGTERM', () => require('fs').appendFileSync(${JSON.stringify(log)}, 'TERM\\n')); require('fs').writeFileSync(${JSON.stringify(log)}, ''); setInterval(() => {}, 1000);`);
    const r = await runBounded(['sh', '-c', `node ${counter} & while [ ! -e ${log} ]; do sleep 0.05; done; echo ok`], { cwd: h.root, env: { PATH: process.env.PATH! }, timeoutMs: 60_000, graceMs: 800 });
    expect(r.exitCode).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe('TERM\n');
  });

  it('a bounded command that exits while its background child holds the pipe ends at its own exit', async () => {
    h = makeHome();
    const file = join(h.root, 'bg.pid');
    const r = await runBounded(['sh', '-c', `sleep 600 & echo $! > ${file}; echo out`], { cwd: h.root, env: { PATH: process.env.PATH! }, timeoutMs: 60_000, graceMs: 200 });
    expect(r).toMatchObject({ exitCode: 0, timedOut: false, aborted: false });
    expect(r.output).toContain('out');
    expect(isAlive(Number(readFileSync(file, 'utf8')))).toBe(false);
  });
});

describe('LightWorker’s own background runner', () => {
  it('started from inside a task (an agent’s MCP session) does not carry the task marker, so a task sweep spares it; no extra CA file on SQLite', async () => {
    h = makeHome();
    const script = join(h.root, 'dump-env.mjs');
    const out = join(h.root, 'env.json');
    writeFileSync(script, `import { writeFileSync } from 'node:fs'; writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.env));`);
    const marker = treeMarkerEnv(h.engine.home.root, '01TASKOFTHEAGENT', 1);
    const ca = process.env.NODE_EXTRA_CA_CERTS;
    const started = (tls: boolean) => {
      rmSync(out, { force: true });
      Object.assign(process.env, marker, { NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' });
      try {
        spawnBackgroundRunner(h!.engine.home, script, { tls });
      } finally {
        for (const k of Object.keys(marker)) delete process.env[k];
        if (ca === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
        else process.env.NODE_EXTRA_CA_CERTS = ca;
      }
    };
    const envOf = async () => {
      await until(() => existsSync(out) && readFileSync(out, 'utf8').endsWith('}'), 20_000, 'the runner to start');
      return JSON.parse(readFileSync(out, 'utf8')) as Record<string, string>;
    };
    started(false);
    const env = await envOf();
    expect(Object.keys(env).filter((k) => k in marker)).toEqual([]);
    // On SQLite it opens no TLS connection: Node need not parse the extra CA file at its start.
    expect(env.NODE_EXTRA_CA_CERTS).toBeUndefined();
    expect(env.PATH).toBe(process.env.PATH);
    started(true);
    expect((await envOf()).NODE_EXTRA_CA_CERTS).toBe('/etc/ssl/certs/ca-certificates.crt');
  });
});
