import { lstatSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { redactText } from '../core/redact.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import type { Task } from '../tasks/types.js';
import { commitAll, commitAuthor } from '../platform/git/branches.js';
import { git, gitTry, splitZ } from '../platform/git/git-exec.js';
import { matchAny } from '../platform/git/globs.js';
import { getAllocation, setHeadCommit } from '../store/worktrees.js';
import { isPrivateRepo, sealPrivateRepo } from './private-repo.js';
import { isInside } from '../platform/git/guards.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { attributeSourceChanges } from './attribution.js';
import type { SourceSnapshot } from './source-status.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

export interface InspectInput {
  repo: string;
  worktree: string;
  baseCommit: string;
  /** The task branch the worktree must still be on. */
  branch: string;
  /** The source checkout before the run; null for a copy of a plain folder (no checkout to watch). */
  source: SourceSnapshot | null;
  copied: string[];
  /** The worktree is a private repository (its `.git` a folder of its own, written back before LightWorker's git there). */
  privateRepo?: boolean;
}

/** Changed files that break the task's boundary, each with the reason in the text. */
export function boundaryViolations(worktree: string, changed: readonly string[], allowed: readonly string[]): string[] {
  const out: string[] = [];
  const root = realpathSync(worktree);
  for (const p of changed) {
    if (allowed.length && !matchAny(p, allowed)) out.push(`${p} (outside allowed_paths)`);
    let st;
    try {
      st = lstatSync(join(worktree, p));
    } catch {
      continue; // deleted
    }
    if (st.isSymbolicLink()) {
      const target = resolve(dirname(join(root, p)), readlinkSync(join(worktree, p)));
      let real = target;
      try {
        real = realpathSync(target);
      } catch {
        // dangling: judge the literal target
      }
      if (!isInside(real, root)) out.push(`${p} (symlink resolving outside the worktree to ${target})`);
    }
  }
  return out;
}

export interface Inspection {
  head: string;
  changedFiles: string[];
  violations: string[];
  diffArtifact: string;
  diffBytes: number;
}

/**
 * Commit the worker's changes onto the task branch (as LightWorker), record the diff from the base as an
 * artifact, and check boundaries: paths outside allowed_paths, symlinks escaping the worktree, and
 * anything that changed in the source checkout during the run.
 */
export async function inspectWorktree(engine: EngineContext, task: Task, input: InspectInput, later: (write: () => void) => void = (w) => engine.write(w)): Promise<Inspection> {
  if (input.privateRepo && !isPrivateRepo(input.worktree)) return replacedGitDir(engine, task, input, later);
  const head = await withRepoLock(input.repo, `commit the work of ${task.id}`, async () => {
    const author = await commitAuthor(input.repo, engine.config.git.author);
    // What the worker set in its repository's config, hooks or git dir must not run in LightWorker's commands.
    if (input.privateRepo) await sealPrivateRepo(input.repo, input.worktree, author);
    await commitAll(input.worktree, `lightworker: ${redactText(task.name)} (${task.id}, attempt ${task.attempt})`, input.copied, author);
    return git(input.worktree, ['rev-parse', 'HEAD']);
  });
  const onBranch = await gitTry(input.worktree, ['symbolic-ref', '--quiet', 'HEAD']);
  const changedFiles = splitZ(
    await git(input.worktree, ['diff', '--name-only', '--no-renames', '-z', input.baseCommit, head], { raw: true }),
  );
  const violations = boundaryViolations(input.worktree, changedFiles, task.allowedPaths);
  if (onBranch.stdout.trim() !== `refs/heads/${input.branch}`) {
    violations.push(`${input.worktree} (HEAD left the task branch ${input.branch}: now ${onBranch.stdout.trim() || 'detached'})`);
  }
  const source = input.source ? await attributeSourceChanges(engine, task, input.repo, input.source) : { violations: [], attributed: [] };
  violations.push(...source.violations);
  const patch = await git(input.worktree, ['diff', '--binary', '--no-color', input.baseCommit, head], { raw: true });
  const diffArtifact = join(engine.home.artifacts, task.id, `diff-${task.attempt}.patch`);
  mkdirPrivate(dirname(diffArtifact));
  writeFileSync(diffArtifact, redactText(patch), { mode: PRIVATE_FILE });
  later(() => {
    if (getAllocation(engine.db, task.id)) setHeadCommit(engine.db, task.id, head);
    appendEvent(engine.db, task.id, 'changes.inspected', {
      head,
      changedFiles: changedFiles.slice(0, 200),
      changedCount: changedFiles.length,
      violations,
      ...(source.attributed.length ? { sourceChangesByOthers: source.attributed } : {}),
      empty: changedFiles.length === 0,
      diffArtifact,
    });
  });
  return { head, changedFiles, violations, diffArtifact, diffBytes: Buffer.byteLength(patch) };
}

/**
 * The worker replaced its private repository's `.git` (by a link or a `gitdir:` file, e.g. to the user's
 * git dir): LightWorker runs no git there; the task has no commit and breaks its boundary.
 */
function replacedGitDir(engine: EngineContext, task: Task, input: InspectInput, later: (write: () => void) => void): Inspection {
  const violations = [`${join(input.worktree, '.git')} (the worker replaced the task repository's git dir; nothing there was committed)`];
  const diffArtifact = join(engine.home.artifacts, task.id, `diff-${task.attempt}.patch`);
  mkdirPrivate(dirname(diffArtifact));
  writeFileSync(diffArtifact, '', { mode: PRIVATE_FILE });
  later(() => appendEvent(engine.db, task.id, 'changes.inspected', { head: input.baseCommit, changedFiles: [], changedCount: 0, violations, empty: true, diffArtifact }));
  return { head: input.baseCommit, changedFiles: [], violations, diffArtifact, diffBytes: 0 };
}

/** Read-only kinds: only the source-checkout comparison applies. */
export async function inspectReadOnly(engine: EngineContext, task: Task, repo: string, before: SourceSnapshot, later: (write: () => void) => void = (w) => engine.write(w)): Promise<string[]> {
  const { violations, attributed } = await attributeSourceChanges(engine, task, repo, before);
  later(() =>
    appendEvent(engine.db, task.id, 'changes.inspected', {
      readOnly: true,
      violations,
      ...(attributed.length ? { sourceChangesByOthers: attributed } : {}),
      empty: true,
    }),
  );
  return violations;
}
