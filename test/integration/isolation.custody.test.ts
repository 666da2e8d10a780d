import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { fingerprintDiff, furnishGuardedRepo, refsOf, repoFingerprint } from '../helpers/repo-fingerprint.js';
import { hitlHarness } from './hitl.helpers.js';

/**
 * Custody of the user's repository against a hostile linked worker (test/fixtures/hostile-git-agent.mjs):
 * whatever it does with git or by absolute path, the repository is byte-identical after the task —
 * prevented (an execute task's private repository has no handle on the user's .git) or put back and
 * reported (`custody.restored`, `show`, `get_task`).
 */
const AGENT = fileURLToPath(new URL('../fixtures/hostile-git-agent.mjs', import.meta.url));

let h: TestHome;
afterEach(() => h?.cleanup());
const { task, events, cli, runUntilIdle } = hitlHarness(() => h);
const git = (dir: string, ...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: 'pipe' }).trim();

/** A user's repository with everything custody guards: a bare origin, packed refs, a hook, uncommitted and untracked work. */
function userRepo(agent: { via: 'cwd' | 'abs' | 'both'; push?: boolean; readOnlySandbox?: boolean }): { origin: string; marker: string } {
  h = makeHome();
  const origin = furnishGuardedRepo(h.root, h.repo);
  const marker = join(h.root, 'agent-starts.log');
  const argv = [process.execPath, AGENT, '{prompt}', '--repo', h.repo, '--via', agent.via, '--marker', marker, ...(agent.push === false ? ['--no-push'] : [])];
  h.configure(`[workers.hostile]\ncommand = ${JSON.stringify(argv)}\n${agent.readOnlySandbox ? 'read_only_sandbox = true\n' : ''}`);
  return { origin, marker };
}

async function runHostile(kind: 'execute' | 'explore' | 'review'): Promise<string> {
  const r = await h.call('delegate_task', { objective: 'do your worst', workspace: h.repo, kind, worker: 'hostile', mode: kind === 'execute' ? 'auto_execute' : 'auto_readonly' });
  await runUntilIdle();
  return r.task.id as string;
}

function restoredPaths(id: string): string[] {
  return events(id, 'custody.restored').flatMap((e) => (e.payload.restored as { path: string }[]).map((x) => x.path)).sort();
}

describe('custody of the user repository against a hostile worker', () => {
  it('an execute task doing git harm from its own folder changes nothing of the user repository or its origin', async () => {
    const { origin, marker } = userRepo({ via: 'cwd' });
    const before = repoFingerprint(h.repo);
    const originBefore = refsOf(origin);
    const id = await runHostile('execute');
    expect(readFileSync(marker, 'utf8').trim().split('\n')).toHaveLength(1); // the agent really ran
    expect(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
    expect(refsOf(origin)).toBe(originBefore);
    // Prevented, not repaired: nothing needed putting back.
    expect(events(id, 'custody.restored')).toEqual([]);
    // Its harm stayed in its own repository (whose config LightWorker wrote back before its own git
    // calls there), and its real work is still there to accept.
    const t = task(id);
    expect(git(t.worktreePath!, 'log', '-1', '--format=%s', 'refs/heads/main')).toBe('hostile');
    expect(() => git(t.worktreePath!, 'config', 'core.hooksPath')).toThrow();
    expect(existsSync(join(t.worktreePath!, 'agent-was-here.txt'))).toBe(true);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
  });

  it('an execute task writing into the user repository by absolute path is put back at once, and the restore is reported', async () => {
    const { origin } = userRepo({ via: 'abs' });
    const before = repoFingerprint(h.repo);
    const originBefore = refsOf(origin);
    const id = await runHostile('execute');
    expect(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
    expect(refsOf(origin)).toBe(originBefore);
    expect(restoredPaths(id)).toEqual(['.git/config', '.git/hooks/post-checkout', '.git/index', '.git/info/exclude', 'README.md', 'planted.txt', 'refs/heads/main', 'refs/tags/planted']);
    const ev = events(id, 'custody.restored')[0].payload as { artifact: string; restored: { path: string; was?: string; found?: string }[] };
    // What the task left is kept: the rewritten file in worktree.patch, the config as found, the moved ref's value.
    expect(readFileSync(join(ev.artifact, 'worktree.patch'), 'utf8')).toContain('+rewritten by a hostile agent');
    expect(readFileSync(join(ev.artifact, 'git', '.git', 'config'), 'utf8')).toContain('/tmp/lightworker-evil-hooks');
    const main = ev.restored.find((r) => r.path === 'refs/heads/main')!;
    expect(git(h.repo, 'cat-file', '-t', main.found!)).toBe('commit');
    expect(git(h.repo, 'rev-parse', 'main')).not.toBe(main.found);
    // show and get_task surface it.
    const shown = await cli(['show', id]);
    expect(shown.stdout).toMatch(/custody: +put back 8 item\(s\) of .* after attempt 1: .*\.git\/config.*refs\/heads\/main/);
    expect(shown.stdout).toContain(`what was found is kept in ${ev.artifact}`);
    expect((await h.call('get_task', { id })).custody).toEqual([expect.objectContaining({ attempt: 1, count: 8, artifact: ev.artifact })]);
  });

  it('a read-only task in a snapshot doing harm both ways leaves the repository byte-identical and says what it put back', async () => {
    userRepo({ via: 'both', push: false });
    const before = repoFingerprint(h.repo);
    const id = await runHostile('explore');
    expect(events(id, 'snapshot.acquired')).toHaveLength(1);
    expect(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
    expect(restoredPaths(id)).toContain('refs/heads/main');
    expect(restoredPaths(id)).toContain('planted.txt');
  });

  it('a read-only task running in the checkout itself (a declared sandbox that is not one) is put back too, push to origin aside', async () => {
    const { origin } = userRepo({ via: 'cwd', push: false, readOnlySandbox: true });
    const before = repoFingerprint(h.repo);
    const originBefore = refsOf(origin);
    const id = await runHostile('review');
    expect(events(id, 'snapshot.acquired')).toEqual([]);
    expect(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
    expect(refsOf(origin)).toBe(originBefore);
    expect(restoredPaths(id)).toEqual(['.git/config', '.git/hooks/pre-commit', 'agent-was-here.txt', 'refs/heads/main']);
  });

  it('a same-size rewrite of a dirty and an untracked file with their times put back, and nothing else touched, is put back too', async () => {
    h = makeHome();
    furnishGuardedRepo(h.root, h.repo);
    const quiet = fileURLToPath(new URL('../fixtures/quiet-rewrite-agent.mjs', import.meta.url));
    h.configure(`[workers.quiet]\ncommand = ${JSON.stringify([process.execPath, quiet, '{prompt}', '--repo', h.repo])}\nread_only_sandbox = true\n`);
    // Whole-second times, so that the agent can put them back exactly.
    for (const f of ['README.md', 'notes.txt']) utimesSync(join(h.repo, f), 1_700_000_000, 1_700_000_000);
    const before = repoFingerprint(h.repo);
    const r = await h.call('delegate_task', { objective: 'look around', workspace: h.repo, kind: 'review', worker: 'quiet', mode: 'auto_readonly' });
    await runUntilIdle();
    expect(readFileSync(join(h.repo, 'README.md'), 'utf8')).toBe('# test repo\nthe user is editing this\n');
    expect(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
    expect(restoredPaths(r.task.id as string)).toEqual(['README.md', 'notes.txt']);
  });

  it("an accept made while another task runs is LightWorker's own write: it stays", async () => {
    userRepo({ via: 'cwd', push: false });
    git(h.repo, 'stash', '-u', '-q'); // accept needs the touched files clean; keep it simple
    const done = await h.call('delegate_task', { objective: 'write a file', workspace: h.repo, kind: 'execute', mode: 'auto_execute', metadata: { mock: { write_files: { 'feature.txt': 'feature\n' } } } });
    await runUntilIdle();
    // A task whose custody spans the accept: its capture is taken, the accept lands, then it ends.
    const { prepareWorkspace, finishWorkspace } = await import('../../main/isolation/workspace.js');
    const { requireTask } = await import('../../main/store/tasks.js');
    const other = await h.call('delegate_task', { objective: 'look', workspace: h.repo, kind: 'explore', mode: 'auto_readonly' });
    const t = requireTask(h.engine.db, other.task.id);
    const ws = await prepareWorkspace(h.engine, t);
    await h.call('accept_task', { id: done.task.id, unverified: true });
    const accepted = git(h.repo, 'rev-parse', 'main');
    await finishWorkspace(h.engine, t, ws);
    expect(git(h.repo, 'rev-parse', 'main')).toBe(accepted);
    expect(readFileSync(join(h.repo, 'feature.txt'), 'utf8')).toBe('feature\n');
    expect(git(h.repo, 'status', '--porcelain')).toBe('');
    expect(events(t.id, 'custody.restored')).toEqual([]);
  });
});

describe('custody checks of tasks ending together', () => {
  /** The git command lines `fn` runs in this process (GIT_TRACE), from the subcommand on. */
  async function gitCalls(fn: () => Promise<unknown>): Promise<string[]> {
    const trace = join(h.root, `git-trace-${Date.now()}.log`);
    process.env.GIT_TRACE = trace;
    try {
      await fn();
    } finally {
      delete process.env.GIT_TRACE;
    }
    if (!existsSync(trace)) return [];
    return [...readFileSync(trace, 'utf8').matchAll(/built-in: git (?:-c \S+ |--git-dir \S+ |--work-tree \S+ )*(?:--no-optional-locks )?(.*)/g)].map((m) => m[1]);
  }

  it('share git status runs, and a write made after a shared check is still put back, the index with it', async () => {
    h = makeHome();
    furnishGuardedRepo(h.root, h.repo);
    const before = repoFingerprint(h.repo);
    const indexBefore = git(h.repo, 'ls-files', '-s');
    const { prepareWorkspace, finishWorkspace } = await import('../../main/isolation/workspace.js');
    const { requireTask } = await import('../../main/store/tasks.js');
    const tasks: ReturnType<typeof requireTask>[] = [];
    for (const name of ['a', 'b', 'c', 'd']) {
      const r = await h.call('delegate_task', { objective: `look ${name}`, workspace: h.repo, kind: 'explore', mode: 'auto_readonly' });
      tasks.push(requireTask(h.engine.db, r.task.id));
    }
    const [a, b, c, d] = tasks;
    // Running, as the runner has them while it prepares and finishes their workspaces (custody shares one
    // baseline among a repository's active tasks).
    for (const t of tasks) h.engine.db.prepare("UPDATE tasks SET status = 'running' WHERE id = ?").run(t.id);
    const prepared: Awaited<ReturnType<typeof prepareWorkspace>>[] = [];
    // In the checkout itself (a worker with a read-only sandbox): their ends ask for the check at once.
    const inPlace = { readOnlyInPlace: true };
    // The capture before the first task reads the index's entries only if a check after needs them.
    const captured = await gitCalls(async () => prepared.push(await prepareWorkspace(h.engine, a, undefined, inPlace)));
    expect(captured.filter((g) => g.startsWith('ls-files'))).toEqual([]);
    for (const t of [b, c, d]) prepared.push(await prepareWorkspace(h.engine, t, undefined, inPlace));
    // a, b and c end together, the checkout as captured: all three asked before the first check began, so
    // its one status serves them all.
    const ended = await gitCalls(() => Promise.all([a, b, c].map((t, i) => finishWorkspace(h.engine, t, prepared[i]))));
    expect(ended.filter((g) => g.startsWith('status --porcelain=v2 -z')), ended.join('\n')).toHaveLength(1);
    // d still runs: its worker writes and stages a file after those checks.
    writeFileSync(join(h.repo, 'late.txt'), 'late\n');
    git(h.repo, 'add', 'late.txt');
    await finishWorkspace(h.engine, d, prepared[3]);
    for (const t of [a, b, c]) expect(events(t.id, 'custody.restored')).toEqual([]);
    expect(restoredPaths(d.id)).toEqual(['.git/index', 'late.txt']);
    expect(git(h.repo, 'ls-files', '-s')).toBe(indexBefore);
    expect(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
  });
});
