import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { commitAuthor, type GitPerson } from '../platform/git/branches.js';
import { commonGitDir, git, gitTry } from '../platform/git/git-exec.js';
import type { HeldLock } from '../platform/git/repo-lock.js';
import { withRepoLock } from '../platform/git/repo-lock.js';

/**
 * An execute task's workspace: a private repository at `<home>/worktrees/<id>` on `lightworker/<id>`,
 * not a `git worktree` of the user's repository. Its `.git` is its own folder: its own config (no
 * remotes, no hooks, no includes), its own refs, HEAD and index; only its objects borrow the user's
 * (`objects/info/alternates`, read-only for git), so creating it copies no history. A worker's
 * `git config`, hook, `branch -f main`, `push` or `remote add` there changes only this folder. The task
 * branch reaches the user's repository only when LightWorker brings it there: on accept, or when the
 * folder is removed while the branch holds work (so it is kept, as a worktree's branch always was).
 *
 * Residual: the borrowed objects must stay in the user's repository. The base commit is on the user's
 * history in every normal case; a base that only a since-deleted branch held can be collected by the
 * user's `git gc --prune` (two weeks by default), after which the private repository cannot read it.
 */

/** Options for every git command LightWorker runs in a repository a worker had: no hooks, no fsmonitor. */
export const SAFE_GIT = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false'];

/** Core settings that decide how files become blobs; the private repository takes the user's. */
const CORE_KEYS = '^core\\.(autocrlf|eol|safecrlf|filemode|symlinks|ignorecase|precomposeunicode|checkstat|trustctime)$';

/** True when `path` holds a private repository (its `.git` is a real folder, not a worktree's `gitdir:` file). */
export function isPrivateRepo(path: string): boolean {
  try {
    return lstatSync(join(path, '.git')).isDirectory();
  } catch {
    return false;
  }
}

/** The user's repository a private repository borrows from (from its alternates), or null. */
export function borrowedRepo(path: string): string | null {
  try {
    const objects = readFileSync(join(path, '.git', 'objects', 'info', 'alternates'), 'utf8').split('\n')[0].trim();
    const common = dirname(objects);
    // A non-bare repository's common dir is `<repo>/.git`.
    return common.endsWith('/.git') && existsSync(common) ? dirname(common) : null;
  } catch {
    return null;
  }
}

function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** The config LightWorker writes into a private repository (and writes back before its own git calls there). */
async function configText(repo: string, author: GitPerson): Promise<string> {
  const [own, format] = await Promise.all([
    gitTry(repo, ['config', '--local', '--get-regexp', CORE_KEYS]),
    gitTry(repo, ['rev-parse', '--show-object-format']),
  ]);
  const sha256 = format.stdout.trim() === 'sha256';
  const lines = ['[core]', `\trepositoryformatversion = ${sha256 ? 1 : 0}`, '\tbare = false', '\tlogallrefupdates = true'];
  for (const line of own.stdout.split('\n').filter(Boolean)) {
    const [key, ...value] = line.split(' ');
    lines.push(`\t${key.slice('core.'.length)} = ${quote(value.join(' '))}`);
  }
  if (sha256) lines.push('[extensions]', '\tobjectformat = sha256');
  lines.push('[user]', `\tname = ${quote(author.name)}`, `\temail = ${quote(author.email)}`);
  lines.push('[gc]', '\tauto = 0');
  return `${lines.join('\n')}\n`;
}

/**
 * Write LightWorker's own git dir settings back into a private repository: config, alternates, the
 * user's excludes; no hooks, no `commondir`/`gitdir` (which would make it share another repository's
 * refs), no attributes of its own. Called before LightWorker runs git there after a worker had it.
 */
export async function sealPrivateRepo(repo: string, path: string, author?: GitPerson): Promise<void> {
  const dir = join(path, '.git');
  const [text, common] = await Promise.all([configText(repo, author ?? (await commitAuthor(repo))), commonGitDir(repo)]);
  writeFileSync(join(dir, 'config'), text);
  mkdirSync(join(dir, 'objects', 'info'), { recursive: true });
  writeFileSync(join(dir, 'objects', 'info', 'alternates'), `${join(common, 'objects')}\n`);
  for (const f of ['hooks', 'commondir', 'gitdir', 'info', 'objects/info/http-alternates']) rmSync(join(dir, f), { recursive: true, force: true });
  const exclude = join(common, 'info', 'exclude');
  mkdirSync(join(dir, 'info'), { recursive: true });
  writeFileSync(join(dir, 'info', 'exclude'), existsSync(exclude) ? readFileSync(exclude) : '');
}

/**
 * Make the private repository of a task at `path` (which must not exist) on `branch` at `commit`, a
 * commit the user's repository has. Nothing is written into the user's repository.
 */
export async function createPrivateRepo(repo: string, path: string, branch: string, commit: string, author: GitPerson): Promise<void> {
  mkdirSync(path, { recursive: true });
  const format = (await gitTry(repo, ['rev-parse', '--show-object-format'])).stdout.trim();
  await git(path, ['init', '-q', '--template=', `--initial-branch=${branch}`, ...(format === 'sha256' ? ['--object-format=sha256'] : []), path]);
  await sealPrivateRepo(repo, path, author);
  await git(path, [...SAFE_GIT, 'reset', '-q', '--hard', commit]);
}

/** The tip of `branch` in the private repository at `path`, or null. */
export async function privateTip(path: string, branch: string): Promise<string | null> {
  const r = await gitTry(path, [...SAFE_GIT, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`]);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

/**
 * Bring `branch` of the private repository at `path` into the user's repository as the same branch
 * (forced: the private one is the task's truth), under the repository lock (`within` when the caller
 * holds it). Only objects the user's repository lacks travel. Returns the tip, or null when the private
 * repository has no such branch (nothing is changed then).
 */
export async function exportBranch(repo: string, path: string, branch: string, within?: HeldLock | null): Promise<string | null> {
  if (!isPrivateRepo(path)) return null;
  await sealPrivateRepo(repo, path);
  const tip = await privateTip(path, branch);
  if (!tip) return null;
  await withRepoLock(
    repo,
    `bring ${branch} into the repository`,
    async () => {
      const have = await gitTry(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]);
      if (have.stdout.trim() === tip) return;
      await git(repo, ['-c', 'gc.auto=0', 'fetch', '-q', '--no-tags', '--no-write-fetch-head', '--no-auto-gc', '--no-recurse-submodules', path, `+refs/heads/${branch}:refs/heads/${branch}`]);
    },
    { within },
  );
  return tip;
}

/**
 * Make `commit` readable in the private repository at `dest`: fetched from the private repository of
 * the task that made it when that still exists, else already there through the user's objects.
 */
export async function bringCommit(dest: string, commit: string, from: { repo: string; path: string; branch: string } | null): Promise<void> {
  if ((await gitTry(dest, ['cat-file', '-e', `${commit}^{commit}`])).exitCode === 0) return;
  if (!from || !isPrivateRepo(from.path)) return;
  await sealPrivateRepo(from.repo, from.path);
  const ref = `refs/lightworker/sources/${commit}`;
  await git(dest, [...SAFE_GIT, 'fetch', '-q', '--no-tags', '--no-write-fetch-head', '--no-auto-gc', from.path, `+refs/heads/${from.branch}:${ref}`]);
}
