import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { commonGitDir, git, gitTry, splitZ } from '../platform/git/git-exec.js';

/**
 * What the source checkout looked like, to detect a worker writing into it: HEAD, the branch it is on,
 * and every path `git status` reports with a cheap fingerprint (status code, size, mtime).
 */
export interface SourceSnapshot {
  head: string | null;
  branchRef: string | null;
  entries: Record<string, string>;
  /** The event sequence number when taken (set by attribution.ts), to find LightWorker's own moves since. */
  seq?: number;
}

function fingerprint(repo: string, path: string, code: string, withMode = false): string {
  try {
    const s = lstatSync(join(repo, path));
    return `${code}:${s.size}:${Math.round(s.mtimeMs)}${withMode ? `:${s.mode.toString(8)}` : ''}`;
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

/** Config keys LightWorker itself writes: `git branch -m/-D` of its task branches rename or drop these
 * sections (and rewrite the whole file while doing so, even when there is nothing to rename). */
const OWN_CONFIG_KEY = /^branch\.lightworker\//;

/**
 * The git config files of the repository (`config`, `config.worktree` when the repository uses
 * per-worktree config, and its submodules' configs) as one entry per key: `.git/config [core.hookspath]` → hash of its values.
 *
 * Why content and not the file's size/mtime: LightWorker's own branch renames and deletions (a retry
 * keeping an earlier attempt's branch, removing an accepted task's worktree) rewrite `.git/config` while
 * other tasks run, so an mtime check blamed every task in the repository. Comparing the parsed keys —
 * all of them, not a list of "dangerous" ones, which would always be incomplete (core.hooksPath,
 * core.fsmonitor, core.sshCommand, filter drivers, aliases, includes…) — minus the
 * `branch.lightworker/*` sections LightWorker manages still catches a worker that plants anything that
 * makes git run code, and names the key. Included files are read too (`--includes`).
 */
async function configEntries(gitDir: string, entries: Record<string, string>): Promise<void> {
  await Promise.all(configFiles(gitDir).map((file) => readConfig(gitDir, file, entries)));
}

/**
 * `config` and `config.worktree` of the git dir, and of every submodule's git dir under `modules/`
 * (`git status` recurses into submodules, so their `core.fsmonitor` runs too).
 */
function configFiles(gitDir: string, prefix = '', depth = 0): string[] {
  const out = ['config', 'config.worktree'].map((f) => prefix + f).filter((f) => existsSync(join(gitDir, f)));
  if (depth >= 4) return out;
  const walk = (dir: string, level: number): void => {
    let names: string[] = [];
    try {
      names = readdirSync(join(gitDir, dir));
    } catch {
      return; // no submodules
    }
    for (const n of names) {
      const sub = `${dir}/${n}`;
      if (existsSync(join(gitDir, sub, 'HEAD'))) out.push(...configFiles(gitDir, `${sub}/`, depth + 1));
      else if (level < 4) walk(sub, level + 1); // a submodule named with slashes nests folders
    }
  };
  walk(`${prefix}modules`, 0);
  return out;
}

/**
 * Parsed config files by path, with the file's identity when read: a snapshot runs twice per task, and a
 * `git config` spawn costs as much as the `git status` itself. An unchanged inode, size, mtime and ctime
 * (git rewrites config by renaming a new file in; a worker cannot set ctime) means unchanged content.
 * Files with includes are always read again: an included file can change on its own.
 */
const parsedConfigs = new Map<string, { identity: string; keys: Record<string, string> }>();

function identityOf(path: string): string | null {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return null;
  }
}

async function readConfig(gitDir: string, file: string, entries: Record<string, string>): Promise<void> {
  const path = join(gitDir, file);
  const identity = identityOf(path);
  const known = parsedConfigs.get(path);
  if (identity && known?.identity === identity) {
    Object.assign(entries, known.keys);
    return;
  }
  const r = await gitTry(gitDir, ['config', '--file', path, '--includes', '--list', '-z'], { raw: true });
  if (r.exitCode !== 0) {
    // Unparseable: git refuses to run with it too; compare the raw bytes so any change still shows.
    entries[`.git/${file}`] = `G:unparseable:${hashOf(readFileSafe(path))}`;
    return;
  }
  const values = new Map<string, string[]>();
  for (const rec of splitZ(r.stdout)) {
    const nl = rec.indexOf('\n');
    const key = nl === -1 ? rec : rec.slice(0, nl);
    if (OWN_CONFIG_KEY.test(key)) continue;
    values.set(key, [...(values.get(key) ?? []), nl === -1 ? '(no value)' : rec.slice(nl + 1)]);
  }
  const keys: Record<string, string> = {};
  for (const [key, vals] of values) keys[`.git/${file} [${key}]`] = `G:${hashOf(vals.join('\0'))}`;
  Object.assign(entries, keys);
  const includes = [...values.keys()].some((k) => /^include(if\..*)?\.path$/.test(k));
  if (identity && !includes) parsedConfigs.set(path, { identity, keys });
}

/** True for the keys `configEntries` makes (`.git/<config file> [<key>]`): they name a setting, not a path. */
export function isConfigKey(key: string): boolean {
  return key.startsWith('.git/') && / \[[^\]]*\]$/.test(key);
}

function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '(unreadable)';
  }
}

/**
 * Files in the git dir that change what git runs (hooks, config) or hides (info/exclude): `git status`
 * never shows them, and a worker planting a hook there would run as the user later. Hooks carry their
 * mode too: `chmod +x` on a dormant hook changes neither size nor mtime.
 */
async function gitDirEntries(gitDir: string, entries: Record<string, string>): Promise<void> {
  const keyOf = (p: string) => `.git/${p}`;
  entries[keyOf('info/exclude')] = fingerprint(gitDir, 'info/exclude', 'G');
  let hooks: string[] = [];
  try {
    hooks = readdirSync(join(gitDir, 'hooks')).filter((h) => !h.endsWith('.sample'));
  } catch {
    // no hooks folder
  }
  for (const h of hooks) entries[keyOf(`hooks/${h}`)] = fingerprint(gitDir, `hooks/${h}`, 'G', true);
  await configEntries(gitDir, entries);
}

/** Fields before the path in a porcelain v2 record, by record type. */
const V2_FIELDS: Record<string, number> = { '1': 8, '2': 9, u: 10, '?': 1, '!': 1 };

/**
 * One `git status --porcelain=v2 --branch` call gives HEAD, the branch and every changed path: a
 * snapshot runs twice per task on the leader, and each git spawn blocks its event loop for a few ms.
 */
export async function snapshotSource(repo: string): Promise<SourceSnapshot> {
  // The git-dir part needs its own git call (config): run it beside `git status`.
  const gitDirPart: Record<string, string> = {};
  const gitDirDone = commonGitDir(repo).then((dir) => gitDirEntries(dir, gitDirPart));
  const out = git(
    repo,
    ['--no-optional-locks', 'status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all', '--ignore-submodules=none'],
    { raw: true },
  );
  const [raw] = await Promise.all([out, gitDirDone]);
  const parts = splitZ(raw);
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
  Object.assign(entries, gitDirPart);
  return { head, branchRef, entries };
}

/** The pseudo-path under which HEAD (commit and branch) is compared. */
export const HEAD_KEY = 'HEAD';

/** One thing that differs between two snapshots: a path (or `HEAD`), its state after, and how to say it. */
export interface SourceChange {
  key: string;
  /** Fingerprint after the change; undefined when the path is clean (or gone) now. */
  after: string | undefined;
  label: string;
}

/** Every path's fingerprint, plus HEAD as `<commit> <branch ref>`. */
export function keyedState(s: SourceSnapshot): Record<string, string> {
  return { ...s.entries, [HEAD_KEY]: `${s.head ?? 'nothing'} ${s.branchRef ?? 'detached'}` };
}

/** Paths (and HEAD moves) that differ between two snapshots of the same checkout, sorted, HEAD last. */
export function diffSnapshots(before: SourceSnapshot, after: SourceSnapshot): SourceChange[] {
  const b = keyedState(before);
  const a = keyedState(after);
  const changed = new Set<string>();
  for (const [p, f] of Object.entries(a)) if (b[p] !== f) changed.add(p);
  for (const p of Object.keys(b)) if (!(p in a)) changed.add(p);
  const paths = [...changed].filter((p) => p !== HEAD_KEY).sort();
  const out: SourceChange[] = paths.map((key) => ({ key, after: a[key], label: key }));
  if (before.head !== after.head)
    out.push({ key: HEAD_KEY, after: a[HEAD_KEY], label: `HEAD (moved from ${before.head ?? 'nothing'} to ${after.head ?? 'nothing'})` });
  else if (before.branchRef !== after.branchRef)
    out.push({
      key: HEAD_KEY,
      after: a[HEAD_KEY],
      label: `HEAD (switched from ${before.branchRef ?? 'detached'} to ${after.branchRef ?? 'detached'})`,
    });
  return out;
}
