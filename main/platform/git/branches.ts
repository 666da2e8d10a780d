import { git, gitTry } from './git-exec.js';

/** LightWorker's own identity: the committer of task commits, the author of its housekeeping snapshots. */
export const LW_AUTHOR = ['-c', 'user.name=LightWorker', '-c', 'user.email=lightworker@localhost', '-c', 'commit.gpgsign=false'];
export const LIGHTWORKER_PERSON: GitPerson = { name: 'LightWorker', email: 'lightworker@localhost' };

export interface GitPerson {
  name: string;
  email: string;
}

/** "Name <email>" → a person (config.toml's `[git] author`), or null when it is not that shape. */
export function parsePerson(text: string): GitPerson | null {
  const m = /^\s*([^<>]*?)\s*<([^<>\s]+)>\s*$/.exec(text);
  return m && m[1] ? { name: m[1], email: m[2] } : null;
}

/**
 * Who a task's commits are authored by: config.toml's `[git] author` when set, else the repository's
 * `user.name` / `user.email` (git's own lookup: the repository, then the global and system config), else
 * LightWorker. The work is the user's (they asked for it, approve and accept it); the committer stays
 * LightWorker so `git log --format='%an / %cn'` still tells a task commit from a hand-made one.
 */
export async function commitAuthor(repo: string, configured?: string): Promise<GitPerson> {
  const fromConfig = configured ? parsePerson(configured) : null;
  if (fromConfig) return fromConfig;
  const [name, email] = await Promise.all(['user.name', 'user.email'].map(async (k) => (await gitTry(repo, ['config', '--get', k])).stdout.trim()));
  return name && email ? { name, email } : LIGHTWORKER_PERSON;
}

/** The environment that makes `person` a commit's author. */
export function authorEnv(person: GitPerson): Record<string, string> {
  return { GIT_AUTHOR_NAME: person.name, GIT_AUTHOR_EMAIL: person.email };
}

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
 * branch, committed by LightWorker and authored by `author` (default LightWorker), skipping `exclude`
 * (files setup copied in). Returns the new commit, or null when there was nothing to commit.
 */
export async function commitAll(worktree: string, message: string, exclude: readonly string[] = [], author: GitPerson = LIGHTWORKER_PERSON): Promise<string | null> {
  const pathspec = ['--', '.', ...exclude.map((p) => `:(exclude,literal)${p}`)];
  await git(worktree, ['add', '-A', ...pathspec]);
  const staged = await gitTry(worktree, ['diff', '--cached', '--quiet']);
  if (staged.exitCode === 0) return null;
  await git(worktree, [...LW_AUTHOR, 'commit', '-q', '--no-verify', '-m', message], { env: authorEnv(author) });
  return git(worktree, ['rev-parse', 'HEAD']);
}
