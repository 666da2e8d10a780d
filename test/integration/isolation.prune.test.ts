import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { getAllocation } from '../../main/store/worktrees.js';
import { blockOf } from '../../main/isolation/ports.js';
import { prepareWorkspace } from '../../main/isolation/workspace.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { drive, git, newExecuteTask, simulateRun } from './isolation.helpers.js';

const RUN_TS = fileURLToPath(new URL('../../bin/run-ts.js', import.meta.url));
const CRASH = fileURLToPath(new URL('../fixtures/isolation/crash-during-allocation.ts', import.meta.url));

let h: TestHome;
afterEach(() => h?.cleanup());

function crashAllocating(home: string, taskId: string, withDisk: boolean): void {
  try {
    execFileSync(process.execPath, [RUN_TS, CRASH, home, taskId, ...(withDisk ? ['with-disk'] : [])], { stdio: 'pipe' });
  } catch (e) {
    expect((e as { signal?: string }).signal).toBe('SIGKILL');
    return;
  }
  throw new Error('the fixture was expected to die by SIGKILL');
}

describe('prune_workspaces', () => {
  it('sweeps an allocation left half-done by a process killed between the two phases', async () => {
    h = makeHome();
    const a = await newExecuteTask(h);
    const b = await newExecuteTask(h);
    crashAllocating(h.home, a.id, true); // record + git worktree add, killed before phase 2
    crashAllocating(h.home, b.id, false); // killed right after the record
    expect(getAllocation(h.engine.db, a.id)?.state).toBe('allocating');
    expect(existsSync(join(h.home, 'worktrees', a.id))).toBe(true);
    expect(blockOf(h.engine.db, a.id)).not.toBeNull();

    const dry = await h.call('prune_workspaces', {});
    const swept = dry.items.filter((i: any) => i.kind === 'allocation');
    expect(swept.map((i: any) => i.taskId).sort()).toEqual([a.id, b.id].sort());
    expect(swept[0].reason).toMatch(/died between the two phases/);
    expect(existsSync(join(h.home, 'worktrees', a.id))).toBe(true); // dry run changed nothing

    const applied = await h.call('prune_workspaces', { apply: true });
    expect(applied.items.filter((i: any) => i.kind === 'allocation').every((i: any) => i.done)).toBe(true);
    expect(existsSync(join(h.home, 'worktrees', a.id))).toBe(false);
    expect(getAllocation(h.engine.db, a.id)?.state).toBe('released');
    expect(getAllocation(h.engine.db, b.id)?.state).toBe('released');
    expect(blockOf(h.engine.db, a.id)).toBeNull();
    expect(git(h.repo, 'worktree', 'list')).not.toContain(a.id);
    expect(git(h.repo, 'branch', '--list', `lightworker/${a.id}`)).toBe(''); // held nothing new

    // The task can be allocated again afterwards.
    const ws = await prepareWorkspace(h.engine, a);
    expect(existsSync(ws.workdir)).toBe(true);
  });

  it('removes worktrees of ended tasks past the TTL but never loses an unmerged commit', async () => {
    h = makeHome();
    const done = await newExecuteTask(h);
    await simulateRun(h, done, (dir) => writeFileSync(join(dir, 'work.txt'), 'valuable\n'));
    const empty = await newExecuteTask(h);
    const run = await simulateRun(h, empty, () => {}); // completed with an empty diff
    const fresh = await newExecuteTask(h);
    await prepareWorkspace(h.engine, fresh); // still running: never pruned
    drive(h, fresh.id, 'running');

    const within = await h.call('prune_workspaces', { apply: true });
    expect(within.items.filter((i: any) => i.kind === 'worktree')).toEqual([]); // TTL not reached

    const r = await h.call('prune_workspaces', { apply: true, ttl_hours: 0 });
    const removed = r.items
      .filter((i: any) => i.kind === 'worktree')
      .map((i: any) => i.taskId)
      .sort();
    expect(removed).toEqual([done.id, empty.id].sort());
    expect(existsSync(run.ws.workdir)).toBe(false);
    expect(existsSync(join(h.home, 'worktrees', fresh.id))).toBe(true);
    const kept = r.items.find((i: any) => i.kind === 'branch' && i.taskId === done.id);
    expect(kept.action).toBe('keep');
    expect(kept.reason).toMatch(/--force/);
    expect(git(h.repo, 'show', `lightworker/${done.id}:work.txt`)).toBe('valuable');
    expect(git(h.repo, 'branch', '--list', `lightworker/${empty.id}`)).toBe(''); // held nothing new: deleted
  });

  it('commits uncommitted leftovers before removing, and deletes an unmerged branch only with force', async () => {
    h = makeHome();
    const t = await newExecuteTask(h);
    const ws = await prepareWorkspace(h.engine, t);
    drive(h, t.id, 'running', 'cancelled');
    writeFileSync(join(ws.workdir, 'half-done.txt'), 'work in progress\n');
    await h.call('prune_workspaces', { apply: true, ttl_hours: 0 });
    expect(existsSync(ws.workdir)).toBe(false);
    expect(git(h.repo, 'show', `lightworker/${t.id}:half-done.txt`)).toBe('work in progress');

    // A branch another branch contains is safe to delete; with --force even an unmerged one goes.
    const t2 = await newExecuteTask(h);
    const ws2 = await prepareWorkspace(h.engine, t2);
    drive(h, t2.id, 'running', 'failed');
    writeFileSync(join(ws2.workdir, 'x.txt'), 'x\n');
    const r = await h.call('prune_workspaces', { apply: true, ttl_hours: 0, force: true });
    expect(r.items.find((i: any) => i.kind === 'branch' && i.taskId === t2.id).action).toBe('remove');
    expect(git(h.repo, 'branch', '--list', `lightworker/${t2.id}`)).toBe('');
    expect(git(h.repo, 'branch', '--list', `lightworker/${t.id}`)).not.toBe(''); // earlier one still there
  });

  it('removes orphan folders and reconciles git worktree list (worktrees made before task repositories were private)', async () => {
    h = makeHome();
    mkdirSync(join(h.home, 'worktrees', 'stray'), { recursive: true });
    writeFileSync(join(h.home, 'worktrees', 'stray', 'f'), 'x');
    const t = await newExecuteTask(h);
    const ws = await prepareWorkspace(h.engine, t);
    // An old-style allocation: a `git worktree` of the repository at the task's path.
    execFileSync('rm', ['-rf', ws.workdir]);
    git(h.repo, 'worktree', 'add', '-q', '-b', `lightworker/${t.id}`, ws.workdir, 'HEAD');
    drive(h, t.id, 'running', 'failed');
    execFileSync('rm', ['-rf', ws.workdir]); // someone deleted the folder by hand
    const dry = await h.call('prune_workspaces', {});
    const kinds = Object.fromEntries(dry.items.map((i: any) => [i.path, i.kind]));
    expect(kinds[join(h.home, 'worktrees', 'stray')]).toBe('directory');
    expect(kinds[ws.workdir]).toBe('worktree');
    expect(git(h.repo, 'worktree', 'list', '--porcelain')).toContain(ws.workdir);
    await h.call('prune_workspaces', { apply: true });
    expect(existsSync(join(h.home, 'worktrees', 'stray'))).toBe(false);
    expect(git(h.repo, 'worktree', 'list', '--porcelain')).not.toContain(ws.workdir);
    expect(getAllocation(h.engine.db, t.id)?.state).toBe('released');
  });
});
