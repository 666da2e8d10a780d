import { createHash } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../core/errors.js';
import { newToken } from '../core/ids.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import { requireTask } from '../store/tasks.js';
import { transition } from '../tasks/state.js';
import type { Task } from '../tasks/types.js';
import { authorEnv, branchTip, commitAuthor } from '../platform/git/branches.js';
import { commonGitDir, git, gitTry, splitZ } from '../platform/git/git-exec.js';
import { getAllocation, type Allocation } from '../store/worktrees.js';
import { copyBack } from './copy.js';
import { exportBranch } from './private-repo.js';
import { withLockFile, withRepoLock, type HeldLock } from '../platform/git/repo-lock.js';
import { currentBranch, markAccepted, moveRef, syncCheckout } from './accept-apply.js';
import { advanceJournal, closeJournal, leaveJournal, openJournal, pauseForTest, type AcceptJournal } from './accept-journal.js';
import { recoverInterruptedAccepts } from './accept-recover.js';
import { holdSignals } from '../core/signal-hold.js';
import { statusEntries } from './source-status.js';
import { verifiedOutcome } from './verify.js';
import { removeWorktree } from './worktree.js';
import { mkdirPrivate } from '../core/private-home.js';

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
  /** Copy isolation: the plain folder the task's changes were copied back into (branch is then ''). */
  copiedTo?: string;
}

/** What may be accepted: a completed execute task whose inspected commit passed verification. */
function checkAcceptable(engine: EngineContext, task: Task, alloc: Allocation | null, opts: AcceptOptions): asserts alloc is Allocation {
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
 * Apply a verified task's work onto the source repository as one commit — on the checked-out branch, or
 * squashed onto `opts.branch` — under the repository lock. Refuses with `conflict`, changing nothing,
 * when a touched file has uncommitted changes in the source checkout or the changes do not apply. Then
 * marks the task accepted and removes its worktree (the task branch is kept).
 */
export async function acceptTask(engine: EngineContext, id: string, opts: AcceptOptions): Promise<AcceptResult> {
  const task = requireTask(engine.db, id);
  const alloc = getAllocation(engine.db, id);
  checkAcceptable(engine, task, alloc, opts);
  if (alloc.copyOf) return acceptCopy(engine, task, alloc, alloc.copyOf, opts);
  const repo = alloc.repo;
  await recoverInterruptedAccepts(engine, { repo });
  let releaseSignals: (() => void) | undefined;
  const outcome = await lockedAccept(repo, `accept ${id}`, async (held) => {
    // Re-read under the lock: a concurrent accept of the same task must not apply it twice.
    if (requireTask(engine.db, id).status !== 'completed') throw new AppError('conflict', `task ${id} was accepted or changed meanwhile`);
    // The task's commits live in its private repository until now: bring its branch into the repository.
    await exportBranch(repo, alloc.path, alloc.branch, held);
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
    const unverified = task.verify.length === 0;
    if (!commit) {
      // Nothing to apply: only the record changes.
      const accepted = engine.write(() => {
        const t = transition(engine.db, id, 'completed', 'accepted', {
          reason: `accepted by ${opts.by} (no changes)`,
          event: { commit: null, branch: target, unverified },
        });
        appendEvent(engine.db, id, 'task.accepted', { commit: null, branch: target, files: files.slice(0, 200), by: opts.by });
        return t;
      });
      return { commit, target, files, accepted, journal: null };
    }
    // From here the user's repository changes: journaled first (a crash is then finished or undone by the
    // next command), and a Ctrl-C or SIGTERM waits until the accept has settled.
    releaseSignals = holdSignals();
    const existed = (await branchTip(repo, target)) !== null;
    const journal = openJournal(engine.home.root, {
      task: id,
      repo,
      branch: target,
      onCheckout,
      oldTip: existed ? targetTip : null,
      parent: targetTip,
      newCommit: commit,
      files,
      by: opts.by,
      unverified,
    });
    const accepted = await applyJournaled(engine, journal);
    return { commit, target, files, accepted, journal };
  }, () => releaseSignals);
  try {
    const fresh = getAllocation(engine.db, id);
    if (fresh && fresh.state !== 'released')
      await removeWorktree(engine, fresh, { reason: 'accepted', deleteBranch: false, snapshot: false });
    if (outcome.journal) {
      advanceJournal(engine.home.root, outcome.journal, 'cleaned');
      await pauseForTest('cleaned');
    }
  } finally {
    if (outcome.journal) closeJournal(engine.home.root, id);
    releaseSignals?.();
  }
  return { task: outcome.accepted, commit: outcome.commit, branch: outcome.target, files: outcome.files };
}

/** The repository lock around an accept; a failure gives held signals back too. */
async function lockedAccept<T>(repo: string, what: string, fn: (held: HeldLock) => Promise<T>, release: () => (() => void) | undefined): Promise<T> {
  try {
    return await withRepoLock(repo, what, fn);
  } catch (err) {
    release()?.();
    throw err;
  }
}

/**
 * The journaled steps, in the order that keeps every crash point recoverable: the ref (compare-and-set),
 * the touched paths of the checkout, the task's record. A failed checkout step puts the ref and the paths
 * back. Each step is written to the journal when done; the journal stays while the task is not settled.
 */
async function applyJournaled(engine: EngineContext, j: AcceptJournal): Promise<Task> {
  const { repo, task: id, branch: target } = j;
  let settled = false;
  try {
    await pauseForTest('journaled');
    if (!(await moveRef(repo, target, j.oldTip, j.newCommit, `lightworker: accept ${id}`))) {
      settled = true;
      closeJournal(engine.home.root, id);
      throw new AppError('conflict', `branch ${target} changed while accepting ${id}; nothing was applied, try again`);
    }
    advanceJournal(engine.home.root, j, 'ref');
    await pauseForTest('ref');
    if (j.onCheckout && j.files.length) {
      try {
        await syncCheckout(repo, j.newCommit, j.files);
      } catch (err) {
        // Put the branch and the (clean before) touched paths back as they were, then report.
        advanceJournal(engine.home.root, j, 'undoing');
        if (!(await moveRef(repo, target, j.newCommit, j.oldTip, `lightworker: undo accept ${id}`))) throw err;
        await syncCheckout(repo, j.parent, j.files);
        settled = true;
        closeJournal(engine.home.root, id);
        throw new AppError('git_failed', `accepting ${id} could not update the checkout, so it was undone: ${(err as Error).message}`);
      }
    }
    advanceJournal(engine.home.root, j, 'checkout');
    await pauseForTest('checkout');
    // Still under the lock, so a second accept waiting for it sees `accepted` and applies nothing.
    const accepted = markAccepted(engine, j);
    if (!accepted) throw new AppError('conflict', `task ${id} changed while being accepted; its commit ${j.newCommit.slice(0, 12)} is on ${target}`);
    advanceJournal(engine.home.root, j, 'marked');
    await pauseForTest('marked');
    settled = true;
    return accepted;
  } finally {
    // Not settled: the journal stays for the recovery (the next command), which finishes or undoes it.
    if (!settled) leaveJournal(id);
  }
}

/**
 * Accept a copy-isolated task: under a lock on its folder, copy its changed files back (only when every
 * original is still what was copied; else conflict, nothing changed), mark it accepted, remove the copy.
 */
async function acceptCopy(engine: EngineContext, task: Task, alloc: Allocation, folder: string, opts: AcceptOptions): Promise<AcceptResult> {
  const id = task.id;
  if (opts.branch)
    throw new AppError('invalid_input', `branch: task ${id} worked on a copy of ${folder} (not a git repository); its changes are copied back there, there is no branch to choose`, {
      field: 'branch',
    });
  const locks = join(engine.home.root, 'locks');
  mkdirPrivate(locks);
  const lock = join(locks, `copy-${createHash('sha256').update(folder).digest('hex').slice(0, 16)}.lock`);
  const outcome = await withLockFile(lock, `accept ${id} into ${folder}`, async () => {
    if (requireTask(engine.db, id).status !== 'completed') throw new AppError('conflict', `task ${id} was accepted or changed meanwhile`);
    const tip = await branchTip(alloc.path, alloc.branch);
    if (tip !== alloc.headCommit)
      throw new AppError('conflict', `task ${id}: its copy's branch moved (${tip ?? 'deleted'}) since it was inspected at ${alloc.headCommit}`);
    const files = await copyBack(engine, task);
    return engine.write(() => {
      const t = transition(engine.db, id, 'completed', 'accepted', {
        reason: `accepted by ${opts.by}: ${files.length} file(s) copied back into ${folder}`,
        event: { commit: null, copiedTo: folder, unverified: task.verify.length === 0 },
      });
      appendEvent(engine.db, id, 'task.accepted', { commit: null, branch: null, copiedTo: folder, files: files.slice(0, 200), by: opts.by });
      return { accepted: t, files };
    });
  });
  await removeWorktree(engine, alloc, { reason: 'accepted', deleteBranch: false, snapshot: false });
  return { task: outcome.accepted, commit: null, branch: '', files: outcome.files, copiedTo: folder };
}
