import { git, gitTry } from './git-exec.js';

/** The identity LightWorker commits with: the worker's changes are recorded, never as the user. */
export const LW_AUTHOR = ['-c', 'user.name=LightWorker', '-c', 'user.email=lightworker@localhost', '-c', 'commit.gpgsign=false'];

export async function branchTip(repo: string, branch: string): Promise<string | null> {
  const r = await gitTry(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`]);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

/**
 * Other branches that contain every commit of `branch` (its tip is reachable from them). Empty means the
 * branch holds commits found nowhere else: deleting it would lose work.
 */
export async function containingBranches(repo: string, branch: string): Promise<string[]> {
  const tip = await branchTip(repo, branch);
  if (!tip) return [];
  const out = await git(repo, ['for-each-ref', '--format=%(refname:short)', '--contains', tip, 'refs/heads/']);
  return out.split('\n').filter((b) => b && b !== branch);
}

/** True when deleting `branch` loses nothing: it does not exist, still points at the commit it was cut
 * from (the task added nothing), or another branch contains its tip. */
export async function isBranchContained(repo: string, branch: string, baseCommit?: string | null): Promise<boolean> {
  const tip = await branchTip(repo, branch);
  if (!tip) return true;
  if (baseCommit && tip === baseCommit) return true;
  return (await containingBranches(repo, branch)).length > 0;
}

/**
 * Commit everything the worktree has (tracked changes and new files git does not ignore) onto its
 * branch as LightWorker, skipping `exclude` (files setup copied in). Returns the new commit, or null
 * when there was nothing to commit.
 */
export async function commitAll(worktree: string, message: string, exclude: readonly string[] = []): Promise<string | null> {
  const pathspec = ['--', '.', ...exclude.map((p) => `:(exclude,literal)${p}`)];
  await git(worktree, ['add', '-A', ...pathspec]);
  const staged = await gitTry(worktree, ['diff', '--cached', '--quiet']);
  if (staged.exitCode === 0) return null;
  await git(worktree, [...LW_AUTHOR, 'commit', '-q', '--no-verify', '-m', message]);
  return git(worktree, ['rev-parse', 'HEAD']);
}
