import { AppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import { requireTask } from '../store/tasks.js';
import type { Task } from '../tasks/types.js';
import { LW_AUTHOR } from '../platform/git/branches.js';
import { git, gitTry, splitZ } from '../platform/git/git-exec.js';
import { getAllocation } from '../store/worktrees.js';
import { bringCommit } from './private-repo.js';
import { verifiedOutcome } from './verify.js';

/** One file two sources changed in ways git could not combine. */
export interface IntegrationConflict {
  file: string;
  /** The source whose merge conflicted on this file. */
  source: string;
  /** Sources merged before it that also changed this file. */
  clashesWith: string[];
}

export interface IntegrationOutcome {
  merged: { source: string; commit: string }[];
  conflicts: IntegrationConflict[];
}

/**
 * The verified commit of a source task: a completed execute task whose inspected head passed its
 * verification (or that had no verify commands). Anything else is refused, naming the source.
 */
function verifiedHead(engine: EngineContext, id: string): string {
  const t = requireTask(engine.db, id);
  const alloc = getAllocation(engine.db, id);
  if (t.kind !== 'execute' || (t.status !== 'completed' && t.status !== 'accepted') || !alloc?.headCommit) {
    throw new AppError('conflict', `integration source ${id} is ${t.status} (${t.kind}); only completed execute tasks with a recorded commit can be integrated`, { field: 'sources' });
  }
  if (t.verify.length) {
    const last = verifiedOutcome(engine, t, alloc);
    if (!last?.ok || last.commit !== alloc.headCommit) throw new AppError('conflict', `integration source ${id}: its latest commit did not pass verification`, { field: 'sources' });
  }
  return alloc.headCommit;
}

/**
 * Merge each source's verified commit into the integration task's worktree (its own branch, cut from
 * the base), one three-way `git merge --no-ff` per source, in order. A source that conflicts is rolled
 * back (`merge --abort`) and the next one is still tried, so every conflicting file of every source is
 * reported at once. Nothing outside the worktree is touched: the user's branch changes only on accept.
 * Records `integrate.merged` and, when anything clashed, `integrate.conflicts` on the task.
 */
export async function integrateSources(engine: EngineContext, task: Task, worktree: string, sources: string[]): Promise<IntegrationOutcome> {
  const heads = sources.map((s) => ({ source: s, commit: verifiedHead(engine, s) }));
  const touched = new Map<string, string[]>();
  const merged: IntegrationOutcome['merged'] = [];
  const conflicts: IntegrationConflict[] = [];
  for (const { source, commit } of heads) {
    // A source's commits live in its own private repository until it is accepted.
    const from = getAllocation(engine.db, source);
    await bringCommit(worktree, commit, from ? { repo: from.repo, path: from.path, branch: from.branch } : null);
    const files = splitZ(await git(worktree, ['diff', '--name-only', '--no-renames', '-z', `HEAD...${commit}`], { raw: true }));
    const r = await gitTry(worktree, [...LW_AUTHOR, 'merge', '--no-ff', '--no-edit', '-m', `lightworker: integrate ${source} into ${task.id}`, commit]);
    if (r.exitCode === 0) {
      merged.push({ source, commit });
      for (const f of files) touched.set(f, [...(touched.get(f) ?? []), source]);
      continue;
    }
    const unmerged = splitZ(await git(worktree, ['diff', '--name-only', '--diff-filter=U', '-z'], { raw: true }));
    await gitTry(worktree, ['merge', '--abort']);
    if (!unmerged.length) throw new AppError('git_failed', `integrating ${source} failed: ${(r.stderr || r.stdout).trim().split('\n').slice(-2).join(' / ')}`);
    for (const file of unmerged) conflicts.push({ file, source, clashesWith: touched.get(file) ?? [] });
  }
  engine.write(() => {
    appendEvent(engine.db, task.id, 'integrate.merged', { merged });
    if (conflicts.length) appendEvent(engine.db, task.id, 'integrate.conflicts', { conflicts });
  });
  return { merged, conflicts };
}

/** One line per conflicting file, for the task's error message. */
export function describeConflicts(conflicts: IntegrationConflict[]): string {
  return conflicts.map((c) => `${c.file}: ${c.source}${c.clashesWith.length ? ` conflicts with ${c.clashesWith.join(', ')}` : ' conflicts with the base'}`).join('\n');
}
