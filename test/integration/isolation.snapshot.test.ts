import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import type { Task } from '../../main/tasks/types.js';
import { listSnapshots } from '../../main/store/snapshots.js';
import { acquireSnapshot } from '../../main/isolation/snapshot.js';
import { finishWorkspace, prepareWorkspace } from '../../main/isolation/workspace.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, makeRepo, tempDir, type TestHome, withTestStore } from '../helpers/env.js';
import { drive, git, newExecuteTask, simulateRun, treeHash } from './isolation.helpers.js';

/**
 * Read-only safety: a read-only task whose worker has no enforced read-only sandbox runs in a
 * disposable snapshot (HEAD + the user's uncommitted changes); the checkout stays byte-identical.
 */

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.reverse()) c();
  cleanups = [];
});

/**
 * A linked worker with no sandbox that misbehaves in its working directory: writes intruder.txt, edits
 * a tracked file, commits, creates a branch and sets git config — then answers with what it saw of the
 * user's uncommitted changes.
 */
const INTRUDER = `import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
const seen = { readme: readFileSync('README.md', 'utf8'), notes: existsSync('notes.txt') ? readFileSync('notes.txt', 'utf8') : null };
writeFileSync('intruder.txt', 'was here\\n');
appendFileSync('README.md', 'intruder line\\n');
const g = (...a) => { try { execFileSync('git', a, { stdio: 'ignore' }); } catch {} };
g('-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-qam', 'intruder');
g('branch', 'intruder-branch');
g('config', 'core.hooksPath', '/tmp/evil');
console.log(JSON.stringify({ summary: JSON.stringify(seen), findings: [] }));
`;

function setupHome(): { home: string; repo: string; dir: string } {
  const t = tempDir();
  cleanups.push(t.cleanup);
  const home = join(t.dir, 'home');
  writeFileSync(join(t.dir, 'intruder.mjs'), INTRUDER);
  withTestStore(home, `[workers.intruder]\ncommand = ${JSON.stringify([process.execPath, join(t.dir, 'intruder.mjs'), '{prompt}'])}\n`);
  const repo = makeRepo(join(t.dir, 'repo'), { 'README.md': '# test repo\n', 'src/a.ts': 'export const a = 1;\n', '.gitignore': 'secret.env\n' });
  return { home, repo, dir: t.dir };
}

async function submitExplore(home: string, repo: string): Promise<string> {
  const r = await runCli(['submit', '-w', repo, '--kind', 'explore', '--worker', 'intruder', '--json', 'look around'], { home });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).task.id as string;
}

async function runAll(home: string, repo: string): Promise<void> {
  const r = await runCli(['run', '--until-idle', '--timeout', '120'], { home, cwd: repo, timeoutMs: 150_000 });
  expect(r.code, r.stderr).toBe(0);
}

/** The task as stored (read through an engine on the same home, as another process would). */
function show(home: string, id: string): Task {
  const engine = new Engine({ home });
  try {
    return requireTask(engine.db, id);
  } finally {
    engine.close();
  }
}

function events(home: string, id: string, type: string): Record<string, any>[] {
  const engine = new Engine({ home });
  try {
    return listEvents(engine.db, { taskId: id, types: [type] }).events.map((e) => e.payload as Record<string, any>);
  } finally {
    engine.close();
  }
}

describe('read-only snapshots (real CLI and runner)', () => {
  it('a misbehaving linked worker in an explore task leaves the checkout byte-identical and still sees the uncommitted changes', async () => {
    const { home, repo } = setupHome();
    // The user's uncommitted work: a modified tracked file, an untracked file, an ignored file.
    appendFileSync(join(repo, 'README.md'), 'my uncommitted line\n');
    writeFileSync(join(repo, 'notes.txt'), 'untracked notes\n');
    writeFileSync(join(repo, 'secret.env'), 'TOKEN=not-for-workers\n');
    const before = treeHash(repo);
    const headBefore = git(repo, 'rev-parse', 'HEAD');

    const first = await submitExplore(home, repo);
    await runAll(home, repo);
    const task1 = show(home, first);
    expect(task1.status, JSON.stringify(task1.error)).toBe('completed');
    const seen = JSON.parse((task1.result as { summary: string }).summary);
    expect(seen).toEqual({ readme: '# test repo\nmy uncommitted line\n', notes: 'untracked notes\n' });

    expect(treeHash(repo)).toBe(before);
    expect(existsSync(join(repo, 'intruder.txt'))).toBe(false);
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(headBefore);
    expect(git(repo, 'branch', '--list', 'intruder-branch')).toBe('');

    const [acquired] = events(home, first, 'snapshot.acquired');
    expect(acquired.reuse).toBe('new');
    const [released] = events(home, first, 'snapshot.released');
    // The worker changed the snapshot's git config: that snapshot is removed, never reused.
    expect(released.kept).toBe(false);
    expect(existsSync(acquired.path)).toBe(false);
  }, 200_000);

  it('reuses a clean snapshot for the same source state and moves it when the state changes', async () => {
    const { home, repo, dir } = setupHome();
    // A worker that only writes scratch files (its git dir stays intact): the snapshot is cleaned and kept.
    writeFileSync(join(dir, 'intruder.mjs'), INTRUDER.replace(/^g\('config'.*$/m, '').replace(/^g\('branch'.*$/m, ''));
    appendFileSync(join(repo, 'README.md'), 'edit one\n');
    const before = treeHash(repo);
    const a = await submitExplore(home, repo);
    await runAll(home, repo);
    const b = await submitExplore(home, repo);
    await runAll(home, repo);
    expect(treeHash(repo)).toBe(before);
    const [acqA] = events(home, a, 'snapshot.acquired');
    const [relA] = events(home, a, 'snapshot.released');
    const [acqB] = events(home, b, 'snapshot.acquired');
    expect(relA).toMatchObject({ kept: true });
    expect(relA.discardedWrites).toEqual(expect.arrayContaining(['intruder.txt']));
    expect(acqB).toMatchObject({ reuse: 'exact', id: acqA.id, stateCommit: acqA.stateCommit });
    // The second task saw the user's state, not the first worker's leftovers.
    const seenB = JSON.parse((show(home, b).result as { summary: string }).summary);
    expect(seenB.readme).toBe('# test repo\nedit one\n');

    writeFileSync(join(repo, 'src', 'a.ts'), 'export const a = 2;\n');
    const c = await submitExplore(home, repo);
    await runAll(home, repo);
    const [acqC] = events(home, c, 'snapshot.acquired');
    expect(acqC).toMatchObject({ reuse: 'moved', id: acqA.id });
    expect(acqC.stateCommit).not.toBe(acqA.stateCommit);
    expect(show(home, c).status).toBe('completed');
  }, 300_000);
});

describe('read-only snapshots: placement and crashes', () => {
  let h: TestHome;
  afterEach(() => h?.cleanup());

  it('a worker that enforces a read-only sandbox runs in place; any other in a snapshot holding the uncommitted changes', async () => {
    h = makeHome();
    writeFileSync(join(h.repo, 'README.md'), 'changed\n');
    const { task } = await h.call('delegate_task', { objective: 'look', kind: 'explore', workspace: h.repo });
    const inPlace = await prepareWorkspace(h.engine, requireTask(h.engine.db, task.id), undefined, { readOnlyInPlace: true });
    expect(inPlace.workdir).toBe(h.repo);
    const snap = await prepareWorkspace(h.engine, requireTask(h.engine.db, task.id));
    expect(snap.workdir).not.toBe(h.repo);
    expect(readFileSync(join(snap.workdir, 'README.md'), 'utf8')).toBe('changed\n');
    expect(git(snap.workdir, 'diff', '--stat', 'HEAD~1')).toContain('README.md');
    await finishWorkspace(h.engine, requireTask(h.engine.db, task.id), snap);
    expect(listSnapshots(h.engine.db).map((s) => s.state)).toEqual(['free']);

    // `isolation.readonly = "snapshot"` overrides the worker's sandbox.
    h.configure('[isolation]\nreadonly = "snapshot"\n');
    const forced = await prepareWorkspace(h.engine, requireTask(h.engine.db, task.id), undefined, { readOnlyInPlace: true });
    expect(forced.workdir).toBe(snap.workdir);
    await finishWorkspace(h.engine, requireTask(h.engine.db, task.id), forced);
  });

  it('an execute task escaping its worktree while a reader runs in a snapshot is blamed itself, not shifted onto the reader', async () => {
    h = makeHome();
    const { task: reader } = await h.call('delegate_task', { objective: 'look', kind: 'explore', workspace: h.repo });
    drive(h, reader.id, 'starting');
    const rws = await prepareWorkspace(h.engine, requireTask(h.engine.db, reader.id));
    expect(rws.workdir).not.toBe(h.repo);
    drive(h, reader.id, 'running');
    const escaped = join(h.repo, 'escaped.txt');
    const run = await simulateRun(h, await newExecuteTask(h), (dir) => {
      writeFileSync(join(dir, 'x.txt'), 'x\n');
      writeFileSync(escaped, 'outside\n');
    });
    expect(run.changes.violations).toEqual([`${escaped} (written in the source checkout; ${reader.id} (explore) also ran in this repository then and may have written it)`]);
    expect(run.task.status).toBe('failed');
  });

  it('a snapshot left in use by a runner that died is found and removed by prune', async () => {
    h = makeHome();
    const { task } = await h.call('delegate_task', { objective: 'look', kind: 'explore', workspace: h.repo });
    const lease = await acquireSnapshot(h.engine, requireTask(h.engine.db, task.id), h.repo);
    expect(existsSync(lease.path)).toBe(true);
    // The runner crashed: its pid is gone.
    h.engine.write(() => h.engine.db.prepare('UPDATE snapshots SET owner_pid = 2147483646, owner_start = NULL').run());
    const dry = await h.call('prune_workspaces', {});
    expect(dry.items).toContainEqual(expect.objectContaining({ kind: 'snapshot', path: lease.path, reason: expect.stringContaining('died') }));
    expect(existsSync(lease.path)).toBe(true);
    await h.call('prune_workspaces', { apply: true });
    expect(existsSync(lease.path)).toBe(false);
    expect(listSnapshots(h.engine.db)).toEqual([]);
    expect(listEvents(h.engine.db, { taskId: task.id, types: ['snapshot.acquired'] }).events).toHaveLength(1);
  });

  it('a leader taking over removes the snapshots of a runner that died', async () => {
    h = makeHome();
    const { task } = await h.call('delegate_task', { objective: 'look', kind: 'explore', workspace: h.repo });
    const lease = await acquireSnapshot(h.engine, requireTask(h.engine.db, task.id), h.repo);
    h.engine.write(() => h.engine.db.prepare('UPDATE snapshots SET owner_pid = 2147483646, owner_start = NULL').run());
    await h.call('delegate_task', { objective: 'more work', kind: 'explore', workspace: h.repo }); // so `run --until-idle` leads
    const r = await runCli(['run', '--until-idle', '--timeout', '60'], { home: h.home, cwd: h.repo, timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(lease.path)).toBe(false);
    expect(listSnapshots(h.engine.db).filter((s) => s.id === lease.id)).toEqual([]);
  }, 120_000);
});
