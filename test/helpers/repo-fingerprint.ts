import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * What a task must leave byte for byte in the user's repository: every file of the working tree (outside
 * `.git`), and in `.git` the index, HEAD, config, packed-refs, hooks/, info/ and every ref outside
 * `refs/heads/lightworker/` — as path → sha256 of bytes (or link target), mode and size.
 */
export function repoFingerprint(repo: string): Map<string, string> {
  const out = new Map<string, string>();
  const add = (path: string) => {
    const st = lstatSync(path);
    const body = st.isSymbolicLink() ? `link:${readlinkSync(path)}` : createHash('sha256').update(readFileSync(path)).digest('hex');
    out.set(relative(repo, path).split(sep).join('/'), `${body}:${(st.mode & 0o777).toString(8)}:${st.size}`);
  };
  const walk = (dir: string, skip: (rel: string) => boolean) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const rel = relative(repo, p).split(sep).join('/');
      if (skip(rel)) continue;
      if (lstatSync(p).isDirectory()) walk(p, skip);
      else add(p);
    }
  };
  walk(repo, (rel) => rel === '.git');
  for (const f of ['index', 'HEAD', 'config', 'packed-refs']) if (existsSync(join(repo, '.git', f))) add(join(repo, '.git', f));
  for (const d of ['hooks', 'info', 'refs']) walk(join(repo, '.git', d), (rel) => rel === '.git/refs/heads/lightworker');
  return out;
}

/** The refs of a (bare) repository, as `git for-each-ref` prints them, plus its packed-refs bytes. */
export function refsOf(gitDir: string): string {
  const refs = execFileSync('git', ['--git-dir', gitDir, 'for-each-ref', '--format=%(refname) %(objectname)'], { encoding: 'utf8' });
  const packed = existsSync(join(gitDir, 'packed-refs')) ? readFileSync(join(gitDir, 'packed-refs'), 'utf8') : '';
  return `${refs}\n--packed--\n${packed}`;
}

/** Paths whose fingerprint differs between two captures (added, removed or changed). */
export function fingerprintDiff(a: Map<string, string>, b: Map<string, string>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
}

/** Bytes that differ between two captures: for each differing path, the larger of its two sizes. */
export function changedBytes(a: Map<string, string>, b: Map<string, string>): number {
  const size = (v: string | undefined) => (v ? Number(v.slice(v.lastIndexOf(':') + 1)) || 1 : 0);
  return fingerprintDiff(a, b).reduce((n, k) => n + Math.max(size(a.get(k)), size(b.get(k)), 1), 0);
}

/**
 * Give `repo` everything custody guards: a bare origin (returned) it has pushed to, packed refs, a tag, a
 * hook, and the user's staged, modified and untracked work.
 */
export function furnishGuardedRepo(root: string, repo: string): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
  const origin = join(root, 'origin.git');
  execFileSync('git', ['init', '-q', '--bare', origin]);
  git('remote', 'add', 'origin', origin);
  git('push', '-q', 'origin', 'main');
  git('tag', 'v1');
  git('pack-refs', '--all');
  writeFileSync(join(repo, '.git', 'hooks', 'pre-push'), '#!/bin/sh\nexit 0\n');
  chmodSync(join(repo, '.git', 'hooks', 'pre-push'), 0o755);
  writeFileSync(join(repo, 'README.md'), '# test repo\nthe user is editing this\n');
  writeFileSync(join(repo, 'staged.txt'), 'staged by the user\n');
  git('add', 'staged.txt');
  writeFileSync(join(repo, 'notes.txt'), 'untracked notes\n');
  return origin;
}
