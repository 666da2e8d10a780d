import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { commonGitDir, git, splitZ } from './git-exec.js';

/**
 * What the source checkout looked like, to detect a worker writing into it: HEAD, the branch it is on,
 * and every path `git status` reports with a cheap fingerprint (status code, size, mtime).
 */
export interface SourceSnapshot {
  head: string | null;
  branchRef: string | null;
  entries: Record<string, string>;
}

function fingerprint(repo: string, path: string, code: string): string {
  try {
    const s = lstatSync(join(repo, path));
    return `${code}:${s.size}:${Math.round(s.mtimeMs)}`;
  } catch {
    return `${code}:gone`;
  }
}

/** Porcelain status of `repo` as path → two-letter code (renames list both paths). */
export async function statusEntries(repo: string): Promise<Map<string, string>> {
  const out = await git(
    repo,
    ['--no-optional-locks', 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignore-submodules=none'],
    { raw: true },
  );
  const parts = splitZ(out);
  const map = new Map<string, string>();
  for (let i = 0; i < parts.length; i++) {
    const code = parts[i].slice(0, 2);
    map.set(parts[i].slice(3), code);
    if (code[0] === 'R' || code[0] === 'C') map.set(parts[++i], code);
  }
  return map;
}

/**
 * Files in the git dir that change what git runs or where it points (hooks, config): `git status` never
 * shows them, and a worker planting a hook there would run as the user later.
 */
function gitDirEntries(gitDir: string, entries: Record<string, string>): void {
  const keyOf = (p: string) => `.git/${p}`;
  for (const p of ['config', 'info/exclude']) entries[keyOf(p)] = fingerprint(gitDir, p, 'G');
  let hooks: string[] = [];
  try {
    hooks = readdirSync(join(gitDir, 'hooks')).filter((h) => !h.endsWith('.sample'));
  } catch {
    // no hooks folder
  }
  for (const h of hooks) entries[keyOf(`hooks/${h}`)] = fingerprint(gitDir, `hooks/${h}`, 'G');
}

/** Fields before the path in a porcelain v2 record, by record type. */
const V2_FIELDS: Record<string, number> = { '1': 8, '2': 9, u: 10, '?': 1, '!': 1 };

/**
 * One `git status --porcelain=v2 --branch` call gives HEAD, the branch and every changed path: a
 * snapshot runs twice per task on the leader, and each git spawn blocks its event loop for a few ms.
 */
export async function snapshotSource(repo: string): Promise<SourceSnapshot> {
  const out = await git(
    repo,
    ['--no-optional-locks', 'status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all', '--ignore-submodules=none'],
    { raw: true },
  );
  const parts = splitZ(out);
  let head: string | null = null;
  let branchRef: string | null = null;
  const entries: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const rec = parts[i];
    if (rec.startsWith('# branch.oid ')) {
      const oid = rec.slice('# branch.oid '.length);
      head = oid === '(initial)' ? null : oid;
      continue;
    }
    if (rec.startsWith('# branch.head ')) {
      const name = rec.slice('# branch.head '.length);
      branchRef = name === '(detached)' ? null : `refs/heads/${name}`;
      continue;
    }
    if (rec.startsWith('#')) continue;
    const type = rec[0];
    const n = V2_FIELDS[type];
    if (n === undefined) continue;
    const fields = rec.split(' ');
    const code = type === '?' || type === '!' ? type.repeat(2) : fields[1];
    const path = fields.slice(n).join(' ');
    entries[path] = fingerprint(repo, path, code);
    if (type === '2') {
      const orig = parts[++i];
      entries[orig] = fingerprint(repo, orig, code);
    }
  }
  gitDirEntries(await commonGitDir(repo), entries);
  return { head, branchRef, entries };
}

/** Paths (and HEAD moves) that differ between two snapshots of the same checkout. */
export function diffSnapshots(before: SourceSnapshot, after: SourceSnapshot): string[] {
  const changed = new Set<string>();
  for (const [p, f] of Object.entries(after.entries)) if (before.entries[p] !== f) changed.add(p);
  for (const p of Object.keys(before.entries)) if (!(p in after.entries)) changed.add(p);
  const out = [...changed].sort();
  if (before.head !== after.head) out.push(`HEAD (moved from ${before.head ?? 'nothing'} to ${after.head ?? 'nothing'})`);
  else if (before.branchRef !== after.branchRef)
    out.push(`HEAD (switched from ${before.branchRef ?? 'detached'} to ${after.branchRef ?? 'detached'})`);
  return out;
}
