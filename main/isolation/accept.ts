import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../core/errors.js';
import { newToken } from '../core/ids.js';
import type { Engine } from '../engine.js';
import { appendEvent } from '../store/events.js';
import { requireTask } from '../store/tasks.js';
import { transition } from '../tasks/state.js';
import type { Task } from '../tasks/types.js';
import { getAllocation, type Allocation } from './allocations.js';
import { authorEnv, branchTip, commitAuthor } from './branches.js';
import { commonGitDir, git, gitTry, splitZ } from './git-exec.js';
import { withRepoLock } from './repo-lock.js';
import { statusEntries } from './source-status.js';
import { verifiedOutcome } from './verify.js';
import { removeWorktree } from './worktree.js';

export interface AcceptOptions {
  /** Squash onto this branch instead of the source checkout's current branch (created from HEAD if missing). */
  branch?: string;
  /** Accept a task that had no verify commands. */
  unverified?: boolean;
  /** Who accepted, for the record. */
  by: string;
}

export interface AcceptResult {
  task: Task;
  commit: string | null;
  branch: string;
  files: string[];
}

/** What may be accepted: a completed execute task whose inspected commit passed verification. */
function checkAcceptable(engine: Engine, task: Task, alloc: Allocation | null, opts: AcceptOptions): asserts alloc is Allocation {
  if (task.kind !== 'execute')
    throw new AppError('invalid_input', `task ${task.id} is a ${task.kind} task; only execute tasks have changes to accept`, {
      field: 'id',
    });
  if (task.status !== 'completed')
    throw new AppError('illegal_transition', `task ${task.id} is ${task.status}; only a completed task can be accepted`, {
      from: task.status,
      to: 'accepted',
    });
  if (!alloc || !alloc.headCommit) throw new AppError('conflict', `task ${task.id} has no inspected changes on record to accept`);
  if (task.verify.length === 0) {
    if (!opts.unverified)
      throw new AppError(
        'invalid_input',
        `task ${task.id} had no verify commands, so nothing checked its work; accept it with --unverified (unverified: true) if you reviewed the diff`,
        { field: 'unverified' },
      );
    return;
  }
  const last = verifiedOutcome(engine, task, alloc);
  if (!last?.ok) throw new AppError('verification_failed', `task ${task.id} did not pass verification; it cannot be accepted`);
  if (last.commit !== alloc.headCommit)
    throw new AppError(
      'conflict',
      `task ${task.id}: the verified commit ${last.commit} is not the task's latest commit ${alloc.headCommit}`,
    );
}

/** The branch checked out in the source checkout, or null when HEAD is detached. */
async function currentBranch(repo: string): Promise<string | null> {
  const r = await gitTry(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

/** Worktrees (other than `repo`) where `branch` is checked out. */
async function checkedOutElsewhere(repo: string, branch: string): Promise<string[]> {
  const out = await git(repo, ['worktree', 'list', '--porcelain', '-z'], { raw: true });
  const found: string[] = [];
  let path = '';
  for (const line of splitZ(out)) {
    if (line.startsWith('worktree ')) path = line.slice(9);
    else if (line === `branch refs/heads/${branch}` && path !== repo) found.push(path);
  }
  return found;
}

/**
 * Build the accepted commit without touching the user's index or files: the task's diff applied
 * three-way onto `targetTip` in a scratch index. Throws conflict (changing nothing) when it does not apply.
 */
async function buildCommit(repo: string, task: Task, alloc: Allocation, targetTip: string, target: string, author?: string): Promise<string | null> {
  const patch = await git(repo, ['diff', '--binary', '--full-index', '--no-color', alloc.baseCommit, alloc.headCommit!], { raw: true });
  if (!patch.trim()) return null;
  const index = join(await commonGitDir(repo), `lightworker-accept-${newToken(6)}.index`);
  const env = { GIT_INDEX_FILE: index };
  try {
    await git(repo, ['read-tree', targetTip], { env });
    const applied = await gitTry(repo, ['apply', '--3way', '--cached', '--whitespace=nowarn'], { env, input: patch });
    if (applied.exitCode !== 0) {
      const files = [...`${applied.stdout}\n${applied.stderr}`.matchAll(/^U (.+)$/gm)].map((m) => m[1]);
      const why = files.length ? `conflicts in ${files.join(', ')}` : applied.stderr.trim().split('\n').slice(-2).join(' / ');
      throw new AppError('conflict', `task ${task.id} does not apply onto ${target}: ${why}; nothing was changed`, { files });
    }
    const tree = await git(repo, ['write-tree'], { env });
    const ident = await gitTry(repo, ['var', 'GIT_COMMITTER_IDENT']);
    const who = authorEnv(await commitAuthor(repo, author));
    const committer: Record<string, string> =
      ident.exitCode === 0 ? {} : { GIT_COMMITTER_NAME: 'LightWorker', GIT_COMMITTER_EMAIL: 'lightworker@localhost' };
    const message = `${task.name}\n\nLightWorker task ${task.id} (attempt ${task.attempt}, worker ${task.worker}).\n${
      task.verify.length ? `Verified by LightWorker: ${task.verify.length} command(s) passed.` : 'Accepted without verify commands.'
    }\n`;
    return await git(repo, ['-c', 'commit.gpgsign=false', 'commit-tree', tree, '-p', targetTip, '-F', '-'], {
      env: { ...who, ...committer },
      input: message,
    });
  } finally {
    rmSync(index, { force: true });
  }
}

/**
 * Bring the touched files of the checkout and its index to `commit` (they were clean before). Files the
 * commit does not have are removed.
 */
async function syncCheckout(repo: string, commit: string, files: string[]): Promise<void> {
  const tree = new Set(splitZ(await git(repo, ['ls-tree', '-r', '--name-only', '-z', commit], { raw: true })));
  const present = files.filter((f) => tree.has(f));
  const gone = files.filter((f) => !tree.has(f));
  if (present.length) await git(repo, ['checkout', '--pathspec-from-file=-', '--pathspec-file-nul', commit], { input: present.join('\0') });
  if (gone.length)
    await git(repo, ['rm', '-q', '-f', '--ignore-unmatch', '--pathspec-from-file=-', '--pathspec-file-nul'], { input: gone.join('\0') });
}

/**
 * Apply a verified task's work onto the source repository as one commit — on the checked-out branch, or
 * squashed onto `opts.branch` — under the repository lock. Refuses with `conflict`, changing nothing,
 * when a touched file has uncommitted changes in the source checkout or the changes do not apply. Then
 * marks the task accepted and removes its worktree (the task branch is kept).
 */
export async function acceptTask(engine: Engine, id: string, opts: AcceptOptions): Promise<AcceptResult> {
  const task = requireTask(engine.db, id);
  const alloc = getAllocation(engine.db, id);
  checkAcceptable(engine, task, alloc, opts);
  const repo = alloc.repo;
  const outcome = await withRepoLock(repo, `accept ${id}`, async () => {
    // Re-read under the lock: a concurrent accept of the same task must not apply it twice.
    if (requireTask(engine.db, id).status !== 'completed') throw new AppError('conflict', `task ${id} was accepted or changed meanwhile`);
    const tip = await branchTip(repo, alloc.branch);
    if (tip !== alloc.headCommit)
      throw new AppError(
        'conflict',
        `task branch ${alloc.branch} moved (${tip ?? 'deleted'}) since it was inspected at ${alloc.headCommit}`,
      );
    const current = await currentBranch(repo);
    const target = opts.branch ?? current;
    if (!target) throw new AppError('conflict', `${repo} is on a detached HEAD; pass --branch to choose where the task's commit goes`);
    if ((await gitTry(repo, ['check-ref-format', '--branch', target])).exitCode !== 0)
      throw new AppError('invalid_input', `branch: "${target}" is not a valid branch name`, { field: 'branch' });
    const elsewhere = await checkedOutElsewhere(repo, target);
    if (target !== current && elsewhere.length)
      throw new AppError('conflict', `branch ${target} is checked out in ${elsewhere.join(', ')}; accept there or choose another --branch`);
    const files = splitZ(
      await git(repo, ['diff', '--name-only', '--no-renames', '-z', alloc.baseCommit, alloc.headCommit!], { raw: true }),
    );
    const onCheckout = target === current;
    let targetTip = await branchTip(repo, target);
    if (!targetTip) targetTip = await git(repo, ['rev-parse', 'HEAD']);
    if (onCheckout) {
      const dirty = await statusEntries(repo);
      const inTree = new Set(splitZ(await git(repo, ['ls-tree', '-r', '--name-only', '-z', targetTip], { raw: true })));
      const blocked = files.filter((f) => dirty.has(f) || (!inTree.has(f) && existsSync(join(repo, f))));
      if (blocked.length) {
        throw new AppError(
          'conflict',
          `${repo} has uncommitted changes in files the task touches: ${blocked.join(', ')}; commit or stash them first (nothing was changed)`,
          { files: blocked },
        );
      }
    }
    const commit = await buildCommit(repo, task, alloc, targetTip, target, engine.config.git.author);
    if (commit) {
      const existed = (await branchTip(repo, target)) !== null;
      const cas = existed ? targetTip : '0'.repeat(40);
      const upd = await gitTry(repo, ['update-ref', '-m', `lightworker: accept ${id}`, `refs/heads/${target}`, commit, cas]);
      if (upd.exitCode !== 0)
        throw new AppError('conflict', `branch ${target} changed while accepting ${id}; nothing was applied, try again`);
      if (onCheckout && files.length) {
        try {
          await syncCheckout(repo, commit, files);
        } catch (err) {
          // Put the branch and the (clean) touched files back as they were, then report.
          await gitTry(repo, ['update-ref', '-m', `lightworker: undo accept ${id}`, `refs/heads/${target}`, targetTip, commit]);
          await syncCheckout(repo, targetTip, files).catch(() => undefined);
          throw new AppError('git_failed', `accepting ${id} could not update the checkout, so it was undone: ${(err as Error).message}`);
        }
      }
    }
    // Still under the lock, so a second accept waiting for it sees `accepted` and applies nothing.
    const accepted = engine.write(() => {
      const t = transition(engine.db, id, 'completed', 'accepted', {
        reason: `accepted by ${opts.by}${commit ? ` as ${commit.slice(0, 12)} on ${target}` : ' (no changes)'}`,
        event: { commit, branch: target, unverified: task.verify.length === 0 },
      });
      appendEvent(engine.db, id, 'task.accepted', { commit, branch: target, files: files.slice(0, 200), by: opts.by });
      return t;
    });
    return { commit, target, files, accepted };
  });
  const fresh = getAllocation(engine.db, id);
  if (fresh && fresh.state !== 'released')
    await removeWorktree(engine, fresh, { reason: 'accepted', deleteBranch: false, snapshot: false });
  return { task: outcome.accepted, commit: outcome.commit, branch: outcome.target, files: outcome.files };
}
