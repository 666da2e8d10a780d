import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { storeConfigFor } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A runner whose PostgreSQL goes away is never silent: cut off, it says what fails and that it retries,
 * and says when it works again; a store that stops answering altogether (a call blocks past
 * LIGHTWORKER_PG_CALL_TIMEOUT_MS) stops it with exit code 1, naming the store, and kills what it ran.
 * The runner reaches the server through a loopback proxy the test can cut; the test's own engine (the
 * "laptop", same host id) talks to the server directly.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let proxy: TcpProxy;
let repo: string;
let runnerHome: string;
let laptop: Engine;
let log: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = tempDir('lw-outage-');
  const target = new URL(url);
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(target.port) });
  const store = storeConfigFor(url);
  const viaProxy = store.replace(`:${target.port}/`, `:${proxy.port}/`);
  repo = makeRepo(join(t.dir, 'repo'));
  log = join(t.dir, 'runs.log');
  const common = `[fleet]\nhost_id = "h1"\nlease_ttl_ms = 1500\n[scheduler]\nkill_grace_ms = 300\nauto_resume_orphans = false\n`;
  runnerHome = join(t.dir, 'runner');
  mkdirSync(runnerHome, { recursive: true });
  writeFileSync(join(runnerHome, 'config.toml'), viaProxy + common);
  const laptopHome = join(t.dir, 'laptop');
  mkdirSync(laptopHome, { recursive: true });
  writeFileSync(join(laptopHome, 'config.toml'), store + common);
  laptop = new Engine({ home: laptopHome });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map((c) => exited(c)));
  for (const pid of workerPids()) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  await proxy?.close();
  laptop?.close();
  t?.cleanup();
});

function startRunner(env: Record<string, string> = {}): { child: ChildProcess; stderr: () => string } {
  const child = startCli(['run'], { home: runnerHome, env });
  children.push(child);
  return { child, stderr: captureStderr(child) };
}

async function submit(mock: Record<string, unknown>): Promise<string> {
  const r = (await runCommand(COMMANDS, { engine: laptop, face: 'cli', depth: 0 }, 'delegate_task', { objective: 'outage probe', workspace: repo, metadata: { mock: { append_log: log, ...mock } } })) as { task: { id: string } };
  return r.task.id;
}

const status = (id: string) => (laptop.db.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string }).status;
const workerPids = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => Number(l.split(' ')[2])) : []);

describe('a runner that loses its PostgreSQL', () => {
  it('cut off, says what fails and that it retries; back, says it works again and runs tasks', async () => {
    const { child, stderr } = startRunner();
    const first = await submit({});
    await until(() => status(first) === 'completed', 30_000, () => `a task before the outage\n${stderr()}`);
    await proxy.cut();
    await until(() => /cannot (keep leading|lead): /.test(stderr()), 30_000, () => `the runner to say it cannot work\n${stderr()}`);
    const said = stderr().split('\n').find((l) => /cannot (keep leading|lead): /.test(l))!;
    expect(said).toMatch(/PostgreSQL/);
    expect(said).toMatch(/retrying$/);
    expect(child.exitCode).toBeNull();
    await proxy.restore();
    await until(() => /working again/.test(stderr()), 30_000, () => `the runner to say it works again\n${stderr()}`);
    const after = await submit({});
    await until(() => status(after) === 'completed', 30_000, () => `a task after the outage\n${stderr()}`);
    child.kill('SIGTERM');
    expect(await exited(child), stderr()).toBe(143); // a SIGTERM, as a shell reports it
    expect(stderr()).not.toMatch(/^\s+at |Node\.js v/m); // said, never a crash's stack trace
  }, 120_000);

  it('a store that stops answering stops the runner (exit 1, naming the store) and kills what it ran', async () => {
    const { child, stderr } = startRunner({ LIGHTWORKER_PG_CALL_TIMEOUT_MS: '2000' });
    const long = await submit({ sleep_ms: 60_000 });
    await until(() => status(long) === 'running' && workerPids().length >= 3, 30_000, () => `the long task to run\n${stderr()}`);
    const pid = workerPids().at(-1)!;
    expect(isAlive(pid)).toBe(true);
    proxy.blackhole();
    const code = await Promise.race([exited(child), new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
    expect(code, stderr()).toBe(1);
    expect(stderr()).toMatch(/stopping: the PostgreSQL store postgres:\/\/lightworker@127\.0\.0\.1:\d+\/postgres \(schema t_[0-9a-f]+\) did not answer within 2 s/);
    expect(isAlive(pid)).toBe(false);
    expect(stderr()).not.toMatch(/^\s+at |Node\.js v/m);
    // Back: the next runner on this host finds the task its predecessor left and orphans it.
    await proxy.restore();
    const next = startRunner();
    await until(() => status(long) === 'orphaned', 30_000, () => `the left task to be orphaned\n${next.stderr()}`);
    next.child.kill('SIGTERM');
    await exited(next.child);
  }, 150_000);
  it('run --until-idle whose lease was lost to an outage (its task orphaned) exits 1, never 0, once idle', async () => {
    const long = await submit({ sleep_ms: 60_000 });
    const child = startCli(['run', '--until-idle'], { home: runnerHome });
    children.push(child);
    const stderr = captureStderr(child);
    await until(() => status(long) === 'running' && workerPids().length > 0 && isAlive(workerPids().at(-1)!), 30_000, () => `the long task to run\n${stderr()}`);
    const pid = workerPids().at(-1)!;
    await proxy.cut();
    try {
      // Its spawner helper kills the worker before the lease can expire (self-fencing).
      await until(() => !isAlive(pid), 30_000, () => `the worker to be killed\n${stderr()}`);
    } finally {
      await proxy.restore();
    }
    // Back: it joins again, finds its old task stranded and orphans it; nothing is left to run.
    const code = await Promise.race([exited(child), new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
    expect(status(long)).toBe('orphaned');
    expect(code, stderr()).toBe(1);
    expect(stderr()).toMatch(/lost its lease while leading/);
  }, 150_000);
  it('a task that ends while the store cannot be reached has its end recorded once it can, not left running under its live runner', async () => {
    // A lease long enough that the outage costs none: only the task's end meets it.
    const home = join(t.dir, 'runner-long-lease');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.toml'), readFileSync(join(runnerHome, 'config.toml'), 'utf8').replace('lease_ttl_ms = 1500', 'lease_ttl_ms = 15000'));
    const child = startCli(['run'], { home });
    children.push(child);
    const stderr = captureStderr(child);
    const gate = join(t.dir, 'end-gate');
    const id = await submit({ wait_file: gate });
    await until(() => status(id) === 'running' && workerPids().length > 0 && isAlive(workerPids().at(-1)!), 30_000, () => `the task to run\n${stderr()}`);
    const pid = workerPids().at(-1)!;
    await proxy.cut();
    try {
      writeFileSync(gate, '');
      await until(() => !isAlive(pid), 30_000, () => `the worker to end\n${stderr()}`);
      const before = stderr().length;
      // The runner meets the outage after its worker ended (its end write, or the next heartbeat).
      await until(() => /cannot (keep leading|lead): /.test(stderr().slice(before)), 30_000, () => `the runner to meet the outage\n${stderr()}`);
    } finally {
      await proxy.restore();
    }
    // What the run met is its end (the check after the worker needed the store), said in the task's error;
    // thrown away, the task stayed `running` for good under a runner that was alive and leading.
    await until(() => !['starting', 'running', 'verifying'].includes(status(id)), 30_000, () => `the task's end to be recorded (it is ${status(id)})\n${stderr()}`);
    const row = laptop.db.prepare('SELECT status, error_message FROM tasks WHERE id = ?').get(id) as { status: string; error_message: string | null };
    expect(row.status === 'completed' || /cannot reach the PostgreSQL store/.test(row.error_message ?? ''), JSON.stringify(row)).toBe(true);
    expect(row.error_message ?? '').not.toContain('password');
    expect(child.exitCode).toBeNull();
    child.kill('SIGTERM');
    expect(await exited(child), stderr()).toBe(143);
  }, 150_000);
});
