import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { currentLease } from '../../main/store/leases.js';
import { SAME_SIGNAL_MS } from '../../main/scheduler/shutdown.js';
import { isPostgres } from '../../main/store/db.js';
import { listRunners } from '../../main/store/runners.js';
import { getTask } from '../../main/store/tasks.js';
import { startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';

let h: TestHome;
const children: ChildProcess[] = [];
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  h.cleanup();
});

async function submit(mock: Record<string, unknown>, name = 'long job'): Promise<string> {
  const r = await h.call('delegate_task', { objective: name, name, workspace: h.repo, kind: 'explore', metadata: { mock } });
  return r.task.id as string;
}

const status = (id: string) => getTask(h.engine.db, id)!.status;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The process `pid` schedules this home: it holds the lease (SQLite), or is an active runner (PostgreSQL fleet). */
function schedules(pid: number | undefined): boolean {
  if (!isPostgres(h.engine.db)) return currentLease(h.engine.db)?.pid === pid;
  return listRunners(h.engine.db, Date.now()).some((r) => r.pid === pid && r.state === 'active');
}

/** The process `pid` no longer holds anything another process must wait out: no lease; a runner stopped cleanly. */
function gaveBack(pid: number | undefined): boolean {
  if (!isPostgres(h.engine.db)) return currentLease(h.engine.db) === null;
  return listRunners(h.engine.db, Date.now()).some((r) => r.pid === pid && r.state === 'stopped');
}

/** A leading face (`run` or `serve`) with one task running in it. */
async function leaderWithRunningTask(args: string[], mock: Record<string, unknown>, env: Record<string, string> = {}) {
  const id = await submit(mock);
  const child = startCli(args, { home: h.home, env });
  children.push(child);
  const stderr = captureStderr(child);
  await until(() => status(id) === 'running', 30_000, 'the task to run');
  return { id, child, stderr };
}

function serveArgs(): { args: string[]; env: Record<string, string> } {
  const dir = join(h.root, 'renderer');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>test</title>');
  return { args: ['serve', '--port', '0', '--no-open'], env: { LIGHTWORKER_RENDERER_DIR: dir } };
}

describe('graceful shutdown of a leading process', () => {
  it('run: a first Ctrl-C lets the running task finish, claims nothing new, then exits 0', async () => {
    const { id, child, stderr } = await leaderWithRunningTask(['run'], { sleep_ms: 5000 });
    child.kill('SIGINT');
    await until(() => /1 task running/.test(stderr()), 10_000, 'the shutdown message');
    expect(stderr()).toMatch(/Ctrl-C again to cancel it/);
    expect(stderr()).toContain(id);
    const later = await submit({ sleep_ms: 10 }, 'submitted during the drain');
    const code = await exited(child);
    expect(code, stderr()).toBe(0);
    expect(status(id)).toBe('completed');
    expect(status(later)).toBe('queued');
  });

  it('run: a second Ctrl-C cancels the running task as stopped by a shutdown and kills its tree', async () => {
    const pidfile = join(h.root, 'grandchild.pid');
    const { id, child, stderr } = await leaderWithRunningTask(['run'], { sleep_ms: 60_000, grandchild: true, ignore_sigterm: true, grandchild_pidfile: pidfile });
    await until(() => { try { return readFileSync(pidfile, 'utf8').length > 0; } catch { return false; } }, 10_000, 'the grandchild');
    const pids = [getTask(h.engine.db, id)!.pid!, Number(readFileSync(pidfile, 'utf8'))];
    child.kill('SIGINT');
    await until(() => /Ctrl-C again to cancel/.test(stderr()), 10_000, 'the shutdown message');
    await pause(SAME_SIGNAL_MS + 200);
    expect(status(id)).toBe('running');
    child.kill('SIGINT');
    expect(await exited(child), stderr()).toBe(130);
    const t = getTask(h.engine.db, id)!;
    expect(t.status).toBe('cancelled');
    expect(t.error?.code).toBe('shutdown');
    expect(t.error?.message).toMatch(/stopped by a shutdown/);
    expect(t.error?.message).toContain(`lightworker retry ${id} --strategy resume`);
    await until(() => pids.every((p) => !isAlive(p)), 5000, 'the tree to die');
    // The lease was given back (the runner stopped cleanly): another process may lead at once.
    expect(gaveBack(child.pid)).toBe(true);
  });

  it('run --drain-timeout: the running task is cancelled that long after the first signal', async () => {
    const { id, child, stderr } = await leaderWithRunningTask(['run', '--drain-timeout', '1'], { sleep_ms: 60_000 });
    child.kill('SIGTERM');
    await until(() => /cancelled in 1 s otherwise/.test(stderr()), 10_000, 'the shutdown message');
    expect(await exited(child), stderr()).toBe(143);
    expect(stderr()).toMatch(/--drain-timeout 1 s reached/);
    expect(getTask(h.engine.db, id)!.error?.code).toBe('shutdown');
  });

  it('run: a third Ctrl-C kills at once instead of waiting out the kill grace', async () => {
    h.configure('[scheduler]\nkill_grace_ms = 60000\n');
    const { id, child, stderr } = await leaderWithRunningTask(['run'], { sleep_ms: 120_000, ignore_sigterm: true });
    const pid = getTask(h.engine.db, id)!.pid!;
    child.kill('SIGINT');
    await until(() => /Ctrl-C again to cancel/.test(stderr()), 10_000, 'the shutdown message');
    await pause(SAME_SIGNAL_MS + 200);
    child.kill('SIGINT');
    await until(() => /cancelling 1 task/.test(stderr()), 10_000, 'the cancel message');
    await pause(SAME_SIGNAL_MS + 200);
    expect(isAlive(pid)).toBe(true); // it ignores SIGTERM and the grace is a minute
    child.kill('SIGINT');
    expect(await exited(child), stderr()).toBe(130);
    expect(isAlive(pid)).toBe(false);
    expect(getTask(h.engine.db, id)!.status).toBe('cancelled');
  });

  it('run: with nothing running, the first signal exits at once', async () => {
    const child = startCli(['run'], { home: h.home });
    children.push(child);
    const stderr = captureStderr(child);
    await until(() => schedules(child.pid), 20_000, 'run to lead');
    child.kill('SIGTERM');
    expect(await exited(child), stderr()).toBe(143);
    expect(stderr()).not.toMatch(/running/);
  });

  it('serve: a first signal waits for the running task and says so; a second cancels it', async () => {
    const { args, env } = serveArgs();
    const { id, child, stderr } = await leaderWithRunningTask(args, { sleep_ms: 60_000 }, env);
    child.kill('SIGTERM');
    await until(() => /1 task running/.test(stderr()), 10_000, 'the shutdown message');
    await pause(SAME_SIGNAL_MS + 200);
    expect(child.exitCode).toBeNull();
    expect(status(id)).toBe('running');
    child.kill('SIGINT');
    expect(await exited(child), stderr()).toBe(130);
    expect(getTask(h.engine.db, id)!.error?.code).toBe('shutdown');
  });

  it('serve: after a first signal the running task completes and the process exits 0', async () => {
    const { args, env } = serveArgs();
    const { id, child, stderr } = await leaderWithRunningTask(args, { sleep_ms: 3000 }, env);
    child.kill('SIGINT');
    await until(() => /1 task running/.test(stderr()), 10_000, 'the shutdown message');
    expect(await exited(child), stderr()).toBe(0);
    expect(status(id)).toBe('completed');
  });
});

describe('npm start (headless fallback)', () => {
  it('a terminal Ctrl-C (to the whole process group, forwarded again by the script) lets the running task finish', async () => {
    const id = await submit({ sleep_ms: 6000 });
    const script = join(import.meta.dirname, '..', '..', 'scripts', 'start.js');
    // Its own process group, as a terminal's foreground job: a Ctrl-C reaches the script and serve at once.
    const child = spawn(process.execPath, [script, '--port', '0', '--no-open'], {
      env: { ...process.env, LIGHTWORKER_HOME: h.home, ELECTRON_OVERRIDE_DIST_PATH: join(h.root, 'no-electron') },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    children.push(child);
    const stderr = captureStderr(child);
    await until(() => status(id) === 'running', 60_000, 'the task to run under npm start');
    process.kill(-child.pid!, 'SIGINT');
    await until(() => /1 task running/.test(stderr()), 10_000, 'the shutdown message');
    await pause(SAME_SIGNAL_MS + 200);
    expect(status(id)).toBe('running');
    expect(await exited(child), stderr()).toBe(0);
    expect(status(id)).toBe('completed');
  });
});

describe('run --timeout is a hard bound', () => {
  it('SIGKILLs a tree that ignores SIGTERM at the deadline instead of adding the kill grace', async () => {
    // A long grace makes the old behaviour (SIGTERM at N, SIGKILL at N + grace) plain to see.
    h.configure('[scheduler]\nkill_grace_ms = 20000\n');
    const pidfile = join(h.root, 'grandchild.pid');
    const id = await submit({ sleep_ms: 60_000, grandchild: true, ignore_sigterm: true, grandchild_pidfile: pidfile });
    const started = Date.now();
    const child = startCli(['run', '--timeout', '12'], { home: h.home });
    children.push(child);
    const stderr = captureStderr(child);
    await until(() => status(id) === 'running' && (() => { try { return readFileSync(pidfile, 'utf8').length > 0; } catch { return false; } })(), 12_000, 'the worker and its grandchild');
    const pids = [getTask(h.engine.db, id)!.pid!, Number(readFileSync(pidfile, 'utf8'))];
    const code = await exited(child);
    const elapsedS = (Date.now() - started) / 1000;
    expect(code, stderr()).toBe(1);
    // N = 12 s from the process start; the 20 s grace must not come on top (generous slack for a busy machine).
    expect(elapsedS).toBeLessThan(12 + 5);
    await until(() => pids.every((p) => !isAlive(p)), 1000, 'the tree to be dead when run exits');
    const t = getTask(h.engine.db, id)!;
    expect(t.status).toBe('cancelled');
    expect(t.error?.code).toBe('shutdown');
  });
});
