import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pythonCommand } from '../../main/platform/proc/spawner.js';
import { getTask } from '../../main/store/tasks.js';
import { helperKillsOnLeaderDeath } from '../helpers/escapes.js';
import { startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { exited, isAlive, until } from '../helpers/procs.js';
import { killMarked, linux, markedBy, pidFrom } from './lifecycle.helpers.js';

// kill -9 of the leader AND of its worker (or verify command): the worker's grandchildren live on with
// PPID 1. The standby that takes over must still sweep them (group of the dead leader + marker).
const helperKills = helperKillsOnLeaderDeath(spawnSync(pythonCommand(), ['-I', '-S', '-c', 'import sys; assert sys.version_info >= (3, 8)'], { stdio: 'ignore' }).status === 0);
let h: TestHome;
const children: ReturnType<typeof startCli>[] = [];
beforeEach(() => {
  h = makeHome();
  // The orphaned end is what these tests look at (automatic resume: lifecycle.auto-resume.test.ts).
  h.configure('[scheduler]\nlease_ttl_ms = 1500\nkill_grace_ms = 300\nauto_resume_orphans = false\n');
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (linux) killMarked(h.engine.home.root);
  h.cleanup();
});

function lead(): ReturnType<typeof startCli> {
  const c = startCli(['run'], { home: h.home });
  children.push(c);
  return c;
}

function kill9(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * kill -9 the leader and the process it recorded (worker or verify command). The standby is started by the
 * caller after it has looked at the survivors: one started earlier may take over and sweep them first.
 */
async function crashLeaderAndChild(leader: ReturnType<typeof startCli>, child: number): Promise<void> {
  kill9(leader.pid!);
  await exited(leader);
  kill9(child);
  await until(() => !isAlive(child), 5000, 'the recorded child process to die');
}

const status = (id: string) => getTask(h.engine.db, id)!.status;

describe('takeover after the leader and its worker were both killed', () => {
  it('kills the surviving grandchildren (in the dead worker’s group, and escaped) and orphans the task, round after round', async () => {
    let leader = lead();
    for (let round = 0; round < 3; round++) {
      const dir = join(h.root, `r${round}`);
      const mock = { sleep_ms: 600_000, grandchild: true, grandchild_pidfile: `${dir}-gc.pid`, ...(linux ? { escape: true, escape_pidfile: `${dir}-esc.pid` } : {}) };
      const { task } = await h.call('delegate_task', { objective: `round ${round}`, workspace: h.repo, metadata: { mock } });
      const survivors = [await pidFrom(`${dir}-gc.pid`, 30_000), ...(linux ? [await pidFrom(`${dir}-esc.pid`)] : [])];
      await until(() => status(task.id) === 'running' && Boolean(getTask(h.engine.db, task.id)!.pid), 20_000, 'the worker pid to be recorded');
      const worker = getTask(h.engine.db, task.id)!.pid!;
      await crashLeaderAndChild(leader, worker);
      // Orphans now, PPID 1 (without cgroups the subreaper helper kills them as its leader dies instead).
      if (!helperKills) expect(survivors.filter(isAlive)).toEqual(survivors);
      const standby = lead();
      await until(() => status(task.id) === 'orphaned', 20_000, 'the standby to take over');
      if (helperKills) await until(() => !survivors.some(isAlive), 10_000, 'the helper to kill its trees');
      expect(survivors.filter(isAlive)).toEqual([]);
      if (!helperKills) expect(getTask(h.engine.db, task.id)!.error?.message).toMatch(/leftover process/);
      leader = standby;
    }
    leader.kill('SIGTERM');
    await exited(leader);
    if (linux) expect(markedBy(h.engine.home.root)).toEqual([]);
  }, 120_000);

  it('sweeps what a killed verify command left behind', async () => {
    const leader = lead();
    const { task } = await h.call('delegate_task', {
      objective: 'verify hangs',
      kind: 'execute',
      workspace: h.repo,
      metadata: { mock: { write_files: { 'a.txt': 'a\n' } } },
      verify: [['sh', '-c', `sleep 600 & echo $! > '${join(h.root, 'bg.pid')}'; sleep 600`]],
    });
    if (task.status === 'awaiting_approval') await h.call('approve_task', { id: task.id });
    const bg = await pidFrom(join(h.root, 'bg.pid'), 30_000);
    expect(status(task.id)).toBe('verifying');
    const verifyShell = getTask(h.engine.db, task.id)!.pid!;
    await crashLeaderAndChild(leader, verifyShell);
    if (!helperKills) expect(isAlive(bg)).toBe(true);
    const standby = lead();
    await until(() => status(task.id) === 'orphaned', 20_000, 'the standby to take over');
    if (helperKills) await until(() => !isAlive(bg), 10_000, 'the helper to kill its trees');
    expect(isAlive(bg)).toBe(false);
    standby.kill('SIGTERM');
    await exited(standby);
  }, 60_000);
});
