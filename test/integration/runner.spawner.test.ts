import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pythonCommand } from '../../main/platform/proc/spawner.js';
import { getTask } from '../../main/store/tasks.js';
import { startCli } from '../helpers/cli.js';
import { makeHome, makeRepo, tempDir, type TestHome } from '../helpers/env.js';
import { helperKillsOnLeaderDeath } from '../helpers/escapes.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { killMarked, linux, markedBy, pidFrom } from './lifecycle.helpers.js';

// platform/proc/spawner.ts: a leader forks worker turns, setup/verify commands and git from a small helper process.
// Every tree keeps its own process group, marker and recorded identity; the helper dies with its leader; if it
// is gone, or python3 cannot run it, the leader forks itself.

/** Parent and process group of a live process (Linux /proc). */
function statOf(pid: number): { ppid: number; pgrp: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), pgrp: Number(f[2]) };
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');

/** The spawner helper a leader started (a child whose command line names it), or null. */
function spawnerOf(leader: number): number | null {
  const children = readFileSync(`/proc/${leader}/task/${leader}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  return children.find((c) => isAlive(c) && cmdline(c).includes('spawner-helper')) ?? null;
}

const HELLO_BLOB = 'b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0'; // git hash-object of "hello"

/** The python3 the helper would run, able to run it (3.8 or later), else why not. */
const python = spawnSync(pythonCommand(), ['-I', '-S', '-c', 'import sys; assert sys.version_info >= (3, 8)'], { stdio: 'ignore' });
const pythonMissing = python.status === 0 ? null : `${pythonCommand()} ${python.error ? 'is not there' : 'is older than 3.8'}`;
// CI installs python3: there the Python helper must be tested, not skipped.
if (pythonMissing && process.env.CI === 'true') throw new Error(`the Python spawner helper cannot be tested: ${pythonMissing}`);
if (pythonMissing) process.stdout.write(`runner.spawner: the Python helper's tests are skipped: ${pythonMissing}\n`);

const skip = pythonMissing !== null;

/** Each test of a block runs with the spawner switched on and `env` set; both are put back after it. */
function withEnv(env: () => Record<string, string | undefined>): void {
  const names = ['LIGHTWORKER_SPAWNER', 'LIGHTWORKER_PYTHON'] as const;
  const before = names.map((n) => process.env[n]);
  beforeEach(() => {
    delete process.env.LIGHTWORKER_SPAWNER;
    for (const [k, v] of Object.entries(env())) if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  });
  afterEach(() => {
    names.forEach((n, i) => {
      if (before[i] === undefined) delete process.env[n];
      else process.env[n] = before[i];
    });
  });
}

describe.skipIf(!linux)('spawner helper, in process', () => {
  const t = tempDir('lw-spawner-');
  const repo = makeRepo(join(t.dir, 'repo'));
  withEnv(() => ({}));
  afterEach(() => vi.restoreAllMocks());
  // Each test gets the modules fresh: a process starts its helper once.
  beforeEach(() => vi.resetModules());
  const load = async () => ({
    spawner: await import('../../main/platform/proc/spawner.js'),
    lifecycle: { ...(await import('../../main/platform/proc/run-tree.js')), ...(await import('../../main/platform/proc/marker.js')) },
    git: await import('../../main/platform/git/git-exec.js'),
  });
  const ppidTree = (lifecycle: Awaited<ReturnType<typeof load>>['lifecycle'], onSpawn?: (pid: number, start: string | null) => void) => {
    let out = '';
    let err = '';
    const end = lifecycle.runTree('sh', ['-c', 'echo $PPID; echo oops >&2; sleep 0.2; exit 3'], {
      cwd: t.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...lifecycle.treeMarkerEnv(t.dir, 'T1', 1) },
      graceMs: 200,
      onSpawn,
      onStdout: (b) => (out += b.toString()),
      onStderr: (b) => (err += b.toString()),
    });
    return end.then((e) => ({ ...e, out, err }));
  };

  it.skipIf(skip)('forks trees and git: the parent is the helper, each tree in its own group with its identity, output and exit codes come back', async () => {
    const { spawner, lifecycle, git } = await load();
    spawner.useSpawner();
    const seen: { pid: number; start: string | null; pgrp: number }[] = [];
    const end = await ppidTree(lifecycle, (pid, start) => seen.push({ pid, start, pgrp: statOf(pid).pgrp }));
    const helper = spawner.spawnerPid()!;
    expect(helper).toBeGreaterThan(0);
    expect(cmdline(helper)).toContain('spawner-helper.py');
    expect(statOf(helper).ppid).toBe(process.pid);
    expect(end.out.trim()).toBe(String(helper)); // forked by the helper, not by this process
    expect(end.err.trim()).toBe('oops');
    expect(end.exitCode).toBe(3);
    expect(seen).toEqual([{ pid: end.pid, start: expect.stringMatching(/^\d+$/), pgrp: end.pid }]);

    expect(await git.git(repo, ['rev-parse', '--show-toplevel'])).toBe(repo);
    expect(await git.git(repo, ['hash-object', '--stdin'], { input: 'hello' })).toBe(HELLO_BLOB);
    const failed = await git.gitTry(repo, ['rev-parse', '--verify', 'no-such-ref']);
    expect(failed.exitCode).not.toBe(0);
    const missing = await lifecycle.runTree('/no/such/program', [], { cwd: t.dir, env: {}, graceMs: 100 });
    expect(missing.spawnError).toMatch(/ENOENT/);
    // Output larger than a pipe holds, and input written to the process, come through whole.
    const big = await git.gitTry(repo, ['hash-object', '--stdin'], { input: 'x'.repeat(300_000) });
    expect(big.stdout.trim()).toMatch(/^[0-9a-f]{40}$/);
    let out = '';
    const cat = await lifecycle.runTree('sh', ['-c', 'head -c 500000 /dev/zero | tr "\\0" y; kill -TERM $$'], { cwd: t.dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, graceMs: 100, onStdout: (b) => (out += b.toString()) });
    expect(out.length).toBe(500_000);
    expect(cat.exitSignal).toBe('SIGTERM');
  });

  it.skipIf(skip)('falls back to forking here when the helper dies: what it had not started yet runs, nothing is lost', async () => {
    const { spawner, lifecycle, git } = await load();
    const notes = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    spawner.useSpawner();
    // Handed to a helper that is still booting (tens of ms), which is then killed before it read anything.
    const tree = ppidTree(lifecycle);
    const blob = git.git(repo, ['hash-object', '--stdin'], { input: 'hello' });
    const helper = spawner.spawnerPid()!;
    process.kill(helper, 'SIGKILL');
    const end = await tree;
    expect(end.out.trim()).toBe(String(process.pid));
    expect(end.exitCode).toBe(3);
    expect(await blob).toBe(HELLO_BLOB);
    expect(notes.mock.calls.map((c) => String(c[0])).join('')).toMatch(/spawner helper exited .*starting processes directly/);
    expect(spawner.spawnerPid()).toBeNull();
    const after = await ppidTree(lifecycle);
    expect(after.out.trim()).toBe(String(process.pid));
  });
});

/** A python3 that fails at once, as a broken or too old one would. */
function failingPython(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'python3'), '#!/bin/sh\necho "not this python" >&2\nexit 1\n');
  chmodSync(join(bin, 'python3'), 0o755);
  return join(bin, 'python3');
}

describe.skipIf(!linux).each([
  { without: 'no python3', python: (dir: string) => join(dir, 'no-such-python3'), why: /could not start \(spawn \S*no-such-python3 ENOENT\)/ },
  { without: 'a python3 that cannot run it', python: failingPython, why: /could not start \(\S*python3 exited with code 1 before it was ready; it needs Python 3\.8 or later\)/ },
])('without a helper ($without), in process', ({ python, why }) => {
  const t = tempDir('lw-spawner-none-');
  const repo = makeRepo(join(t.dir, 'repo'));
  withEnv(() => ({ LIGHTWORKER_PYTHON: python(t.dir) }));
  afterEach(() => vi.restoreAllMocks());
  beforeEach(() => vi.resetModules());

  it('forks here instead, says why once on stderr, and its trees and git work as before', async () => {
    const notes = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const spawner = await import('../../main/platform/proc/spawner.js');
    const lifecycle = { ...(await import('../../main/platform/proc/run-tree.js')), ...(await import('../../main/platform/proc/marker.js')) };
    const git = await import('../../main/platform/git/git-exec.js');
    spawner.useSpawner();
    // Handed to the helper before it failed: started here, with its input.
    const blob = git.git(repo, ['hash-object', '--stdin'], { input: 'hello' });
    let out = '';
    const end = await lifecycle.runTree('sh', ['-c', 'echo $PPID; exit 3'], { cwd: t.dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...lifecycle.treeMarkerEnv(t.dir, 'T1', 1) }, graceMs: 200, onStdout: (b) => (out += b.toString()) });
    expect(out.trim()).toBe(String(process.pid));
    expect(end.exitCode).toBe(3);
    expect(await blob).toBe(HELLO_BLOB);
    expect(await git.git(repo, ['rev-parse', '--show-toplevel'])).toBe(repo);
    expect(spawner.spawnerPid()).toBeNull();
    expect(spawner.spawnerContainment()).toBeNull();
    const said = notes.mock.calls.map((c) => String(c[0])).filter((m) => m.includes('spawner helper'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(why);
    expect(said[0]).toMatch(/starting processes directly/);
  });
});

describe.skipIf(!linux)('a leader without python3', () => {
  let h: TestHome;
  let leader: ReturnType<typeof startCli> | null = null;
  beforeEach(() => {
    h = makeHome();
    writeFileSync(h.engine.home.config, '[scheduler]\nlease_ttl_ms = 1500\nkill_grace_ms = 300\nauto_resume_orphans = false\n');
  });
  afterEach(() => {
    if (leader && leader.exitCode === null && leader.signalCode === null) leader.kill('SIGKILL');
    killMarked(h.engine.home.root);
    h.cleanup();
  });

  it('forks its workers itself, says why once, and still sweeps a cancelled worker tree with its grandchild', async () => {
    leader = startCli(['run'], { home: h.home, env: { LIGHTWORKER_PYTHON: join(h.root, 'no-such-python3') } });
    const stderr = captureStderr(leader);
    const gcFile = join(h.root, 'gc.pid');
    const { task } = await h.call('delegate_task', { objective: 'sleep', workspace: h.repo, metadata: { mock: { sleep_ms: 600_000, grandchild: true, grandchild_pidfile: gcFile } } });
    const grandchild = await pidFrom(gcFile, 30_000);
    await until(() => statusOf(h, task.id) === 'running' && Boolean(getTask(h.engine.db, task.id)!.pid), 20_000, 'the worker pid to be recorded');
    const worker = getTask(h.engine.db, task.id)!.pid!;
    expect(statOf(worker).ppid).toBe(leader.pid); // forked by the leader itself
    expect(statOf(worker).pgrp).toBe(worker);
    expect(spawnerOf(leader.pid!)).toBeNull();
    await h.call('cancel_task', { id: task.id });
    await until(() => statusOf(h, task.id) === 'cancelled', 20_000, 'the cancel');
    await until(() => ![worker, grandchild].some(isAlive), 10_000, 'the worker tree to be swept');
    expect(markedBy(h.engine.home.root)).toEqual([]);
    const second = (await h.call('delegate_task', { objective: 'two', workspace: h.repo, metadata: { mock: {} } })).task;
    await until(() => statusOf(h, second.id) === 'completed', 30_000, 'the second task to complete');
    expect(stderr().match(/spawner helper could not start \(spawn \S*no-such-python3 ENOENT\); starting processes directly/g)).toHaveLength(1);
    leader.kill('SIGTERM');
    await exited(leader);
  }, 60_000);
});

const statusOf = (h: TestHome, id: string) => getTask(h.engine.db, id)!.status;

describe.skipIf(!linux || skip)('a leader and its spawner helper', () => {
  let h: TestHome;
  const procs: ReturnType<typeof startCli>[] = [];
  beforeEach(() => {
    h = makeHome();
    writeFileSync(h.engine.home.config, '[scheduler]\nlease_ttl_ms = 1500\nkill_grace_ms = 300\nauto_resume_orphans = false\n');
  });
  afterEach(() => {
    for (const c of procs.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    killMarked(h.engine.home.root);
    h.cleanup();
  });
  const lead = () => {
    const c = startCli(['run'], { home: h.home });
    procs.push(c);
    return c;
  };
  const status = (id: string) => getTask(h.engine.db, id)!.status;

  it('runs the worker under the helper; kill -9 of the leader takes the helper with it, and the standby sweeps the worker tree', async () => {
    const leader = lead();
    const gcFile = join(h.root, 'gc.pid');
    const { task } = await h.call('delegate_task', { objective: 'sleep', workspace: h.repo, metadata: { mock: { sleep_ms: 600_000, grandchild: true, grandchild_pidfile: gcFile } } });
    const grandchild = await pidFrom(gcFile, 30_000);
    await until(() => status(task.id) === 'running' && Boolean(getTask(h.engine.db, task.id)!.pid), 20_000, 'the worker pid to be recorded');
    const worker = getTask(h.engine.db, task.id)!.pid!;
    const helper = statOf(worker).ppid;
    expect(cmdline(helper)).toMatch(/spawner-helper\.py/);
    expect(statOf(helper).ppid).toBe(leader.pid);
    expect(statOf(worker).pgrp).toBe(worker); // its own process group, as before
    expect(spawnerOf(leader.pid!)).toBe(helper);

    const standby = lead();
    process.kill(leader.pid!, 'SIGKILL');
    await exited(leader);
    await until(() => !isAlive(helper), 5000, 'the helper to exit with its leader');
    // Only the standby ends them; or, without cgroups, the subreaper helper took them with it.
    if (helperKillsOnLeaderDeath(true)) await until(() => ![worker, grandchild].some(isAlive), 10_000, 'the helper to kill its trees');
    else expect([worker, grandchild].filter(isAlive)).toEqual([worker, grandchild]);
    await until(() => status(task.id) === 'orphaned', 20_000, 'the standby to take over');
    expect([worker, grandchild].filter(isAlive)).toEqual([]);
    expect(markedBy(h.engine.home.root)).toEqual([]);
    standby.kill('SIGTERM');
    await exited(standby);
  }, 60_000);

  it('a leader whose helper died forks its workers itself and finishes their tasks', async () => {
    const leader = lead();
    const stderr = captureStderr(leader);
    const first = (await h.call('delegate_task', { objective: 'one', workspace: h.repo, metadata: { mock: {} } })).task;
    await until(() => status(first.id) === 'completed', 30_000, 'the first task to complete');
    const helper = spawnerOf(leader.pid!)!;
    expect(helper).toBeGreaterThan(0);
    process.kill(helper, 'SIGKILL');
    await until(() => /spawner helper exited/.test(stderr()), 5000, 'the leader to notice');
    const pidFile = join(h.root, 'w.pid');
    const second = (await h.call('delegate_task', { objective: 'two', workspace: h.repo, metadata: { mock: { sleep_ms: 600_000, grandchild: true, grandchild_pidfile: pidFile } } })).task;
    await pidFrom(pidFile, 30_000);
    await until(() => Boolean(getTask(h.engine.db, second.id)!.pid), 20_000, 'the worker pid to be recorded');
    expect(statOf(getTask(h.engine.db, second.id)!.pid!).ppid).toBe(leader.pid);
    await h.call('cancel_task', { id: second.id });
    await until(() => status(second.id) === 'cancelled', 20_000, 'the cancel');
    const third = (await h.call('delegate_task', { objective: 'three', workspace: h.repo, metadata: { mock: {} } })).task;
    await until(() => status(third.id) === 'completed', 30_000, 'the third task to complete');
    expect(markedBy(h.engine.home.root)).toEqual([]);
    leader.kill('SIGTERM');
    await exited(leader);
  }, 60_000);
});
