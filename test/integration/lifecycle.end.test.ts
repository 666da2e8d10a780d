import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { getTask } from '../../main/store/tasks.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { isAlive, until } from '../helpers/procs.js';
import { killMarked, linux, markedBy, pidFrom } from './lifecycle.helpers.js';

// Every end of a task leaves nothing running: normal completion, a worker whose background child holds
// its stdout, timeout, cancel, and (Linux) a descendant that escaped the process group.
let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(async () => {
  // Kill leftovers first, so a failed assertion cannot leave stop() waiting on them.
  if (linux) killMarked(h.engine.home.root);
  await svc?.stop();
  svc = null;
  if (linux) killMarked(h.engine.home.root);
  h.cleanup();
});

async function runMock(mock: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> {
  svc ??= await startSchedulerService(h.engine);
  const r = await h.call('delegate_task', { objective: 'lifecycle', workspace: h.repo, metadata: { mock }, ...extra });
  return r.task.id;
}

async function ended(id: string): Promise<string> {
  return (await waitTasks(h.engine, [id], 30_000)).tasks[0].status;
}

describe('a normal end sweeps the tree', () => {
  it('a grandchild that ignores SIGTERM is dead once the task is completed', async () => {
    const pidfile = join(h.root, 'gc.pid');
    const id = await runMock({ grandchild: true, grandchild_pidfile: pidfile });
    expect(await ended(id)).toBe('completed');
    expect(isAlive(await pidFrom(pidfile))).toBe(false);
  });

  it('a failing worker leaves nothing either: failed, and its SIGTERM-ignoring grandchild is dead', async () => {
    const pidfile = join(h.root, 'gc.pid');
    const id = await runMock({ grandchild: true, grandchild_pidfile: pidfile, fail_message: 'gave up' });
    expect(await ended(id)).toBe('failed');
    expect(isAlive(await pidFrom(pidfile))).toBe(false);
  });

  it('a worker that leaves a background child holding its stdout completes, and the child is dead', async () => {
    const pidfile = join(h.root, 'bg.pid');
    const id = await runMock({ background: true, background_pidfile: pidfile });
    expect(await ended(id)).toBe('completed');
    expect(getTask(h.engine.db, id)!.result).toMatchObject({ summary: 'mock completed explore task' });
    expect(isAlive(await pidFrom(pidfile))).toBe(false);
  });

  it('`run --until-idle` (the real CLI) ends after such a task instead of hanging on it', async () => {
    const pidfile = join(h.root, 'bg.pid');
    const { task } = await h.call('delegate_task', { objective: 'dev server', workspace: h.repo, metadata: { mock: { background: true, background_pidfile: pidfile } } });
    const r = await runCli(['run', '--until-idle'], { home: h.home, timeoutMs: 45_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(getTask(h.engine.db, task.id)!.status).toBe('completed');
    expect(isAlive(await pidFrom(pidfile))).toBe(false);
  });

  it('a linked shell worker running `sleep 600 &` completes with its answer, and the sleep is dead', async () => {
    const script = join(h.root, 'agent.sh');
    const pidfile = join(h.root, 'sleep.pid');
    writeFileSync(script, `#!/bin/sh\nsleep 600 &\necho $! > '${pidfile}'\necho '{"session_id":"s1"}'\necho '{"summary":"served","findings":[]}'\n`);
    chmodSync(script, 0o755);
    await h.call('link_worker', { name: 'devserver', command_json: [script, '{prompt}'] });
    const id = await runMock({}, { worker: 'devserver' });
    expect(await ended(id)).toBe('completed');
    expect(getTask(h.engine.db, id)!.result).toMatchObject({ summary: 'served' });
    expect(isAlive(await pidFrom(pidfile))).toBe(false);
  });

  it.skipIf(!linux)('a descendant that escaped the group (own session, re-parented to init) is found by its marker and killed', async () => {
    const pidfile = join(h.root, 'esc.pid');
    const id = await runMock({ escape: true, escape_pidfile: pidfile });
    expect(await ended(id)).toBe('completed');
    expect(isAlive(await pidFrom(pidfile))).toBe(false);
    expect(markedBy(h.engine.home.root)).toEqual([]);
  });
  if (!linux) console.log('skipped the escaped-descendant test: finding escaped processes by marker needs /proc (Linux)');
});

describe('timeout and cancel end a tree whose worker never exits', () => {
  const forever = (dir: string) => ({ sleep_ms: 600_000, ignore_sigterm: true, grandchild: true, grandchild_pidfile: join(dir, 'gc.pid'), background: true, background_pidfile: join(dir, 'bg.pid') });

  it('timeout → timed_out and nothing survives', async () => {
    const id = await runMock(forever(h.root), { timeout_s: 2 });
    const pids = [await pidFrom(join(h.root, 'gc.pid')), await pidFrom(join(h.root, 'bg.pid'))];
    expect(await ended(id)).toBe('timed_out');
    expect(pids.filter(isAlive)).toEqual([]);
    if (linux) expect(markedBy(h.engine.home.root)).toEqual([]);
  });

  it('cancel from another process → cancelled and nothing survives', async () => {
    const id = await runMock(forever(h.root));
    const pids = [await pidFrom(join(h.root, 'gc.pid')), await pidFrom(join(h.root, 'bg.pid'))];
    await until(() => getTask(h.engine.db, id)!.status === 'running', 20_000, 'the task to run');
    const c = await runCli(['cancel', id], { home: h.home });
    expect(c.code, c.stderr).toBe(0);
    expect(await ended(id)).toBe('cancelled');
    expect(pids.filter(isAlive)).toEqual([]);
    if (linux) expect(markedBy(h.engine.home.root)).toEqual([]);
  });

  it('cancel during a setup command that never ends → cancelled and the setup process is dead', async () => {
    const pidfile = join(h.root, 'setup.pid');
    mkdirSync(join(h.repo, '.lightworker'), { recursive: true });
    writeFileSync(join(h.repo, '.lightworker', 'setup.toml'), `setup = ${JSON.stringify(`echo $$ > '${pidfile}'; exec sleep 600`)}\n`);
    execFileSync('git', ['add', '.lightworker/setup.toml'], { cwd: h.repo });
    execFileSync('git', ['commit', '-qm', 'setup'], { cwd: h.repo });
    const id = await runMock({}, { kind: 'execute' });
    if (getTask(h.engine.db, id)!.status === 'awaiting_approval') await h.call('approve_task', { id });
    const setup = await pidFrom(pidfile);
    const c = await runCli(['cancel', id], { home: h.home });
    expect(c.code, c.stderr).toBe(0);
    expect(await ended(id)).toBe('cancelled');
    expect(isAlive(setup)).toBe(false);
  });
});
