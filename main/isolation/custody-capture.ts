import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync, type BigIntStats } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { commonGitDir, gitTry, ownGitDir, splitZ } from '../platform/git/git-exec.js';
import { SAFE_GIT } from './private-repo.js';
import { sourceStateCommit } from './snapshot.js';

/**
 * What of the user's repository a task must leave as it found it, captured cheaply enough to take
 * before and after every task: the git dir's files that make git run code or name commits (config and
 * the files it includes, hooks/, info/, HEAD, packed-refs, every loose ref outside
 * `refs/heads/lightworker/`), the index's entries, and the working tree (tracked and untracked,
 * non-ignored) as one commit in the snapshot store — written from a copy of the user's index, so
 * unchanged files are not hashed again and nothing is written into the user's repository.
 */

/** The engine as the snapshot store takes it (this layer names no engine type of its own). */
export type Engine = Parameters<typeof sourceStateCommit>[0];

/** One file as found: its bytes and mode, a link's target, or absent (null). */
export type FileEntry = { bytes: Buffer; mode: number } | { link: string } | null;

export interface RepoState {
  repo: string;
  /** The repository's own git dir (HEAD, index); the common one holds config, hooks, info, refs. */
  gitDir: string;
  common: string;
  /** Absolute path → entry: config files, included files, HEAD, packed-refs, and every file under the scanned folders. */
  files: Map<string, FileEntry>;
  /** The folders scanned whole (a file found there later that is not in `files` was added). */
  folders: string[];
  /** Path → signature of the files in `files` that were settled when read (see captureGitFiles' `known`). */
  signatures?: Map<string, string>;
  /**
   * `git ls-files -s` of the index (mode, blob, stage, path per entry), or null without an index;
   * undefined when not read at capture (see {@link indexEntriesOf}: read from `index` when needed).
   */
  indexEntries?: string | null;
  /** The index file's bytes (to put back as it was, stat cache included). */
  index: Buffer | null;
  /** The working tree's state commit in the snapshot store. */
  worktree: string;
  /** {@link worktreeFingerprint} taken with the capture: the same one later means the index and working tree did not change. */
  quick: string | null;
}

/** Refs LightWorker owns in the user's repository: task branches brought there on accept or removal. */
export const OWN_REFS = `refs${sep}heads${sep}lightworker${sep}`;

/**
 * A file's identity and every stat field a write changes (ctime to the nanosecond: no write, chmod or
 * utimes keeps it, and user code cannot set it).
 */
function signatureOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/**
 * A file's ctime must be this much older than the capture that read it before its signature vouches for
 * its bytes later: a write in the same timestamp tick as that read (ext4's clock ticks every few ms, some
 * file systems keep whole or even two seconds) could otherwise leave the ctime as it was.
 */
const SETTLED_NS = 3_000_000_000n;

/**
 * Reads guarded files, taking a file's bytes from an earlier capture (`known`) when its signature is the
 * one that capture recorded: those files are read once per baseline, not again after every task.
 */
class EntryReader {
  readonly signatures = new Map<string, string>();
  /** Taken before any lstat of this capture: a ctime older than this less SETTLED_NS was settled at its read. */
  readonly #startNs = BigInt(Date.now()) * 1_000_000n;

  constructor(
    private readonly known?: Pick<RepoState, 'files' | 'signatures'>,
    private readonly settledNs = SETTLED_NS,
  ) {}

  read(path: string, found?: BigIntStats): FileEntry {
    try {
      const st = found ?? lstatSync(path, { bigint: true });
      if (!st.isSymbolicLink() && !st.isFile()) return null;
      const sig = signatureOf(st);
      if (st.ctimeNs < this.#startNs - this.settledNs) this.signatures.set(path, sig);
      const was = this.known?.signatures?.get(path) === sig ? this.known.files.get(path) : undefined;
      if (was) return was;
      return st.isSymbolicLink() ? { link: readlinkSync(path) } : { bytes: readFileSync(path), mode: Number(st.mode) & 0o777 };
    } catch {
      return null;
    }
  }
}

export function sameEntry(a: FileEntry | undefined, b: FileEntry | undefined): boolean {
  if (!a || !b) return !a && !b;
  if ('link' in a || 'link' in b) return 'link' in a && 'link' in b && a.link === b.link;
  return a.mode === b.mode && a.bytes.equals(b.bytes);
}

/** Every file under `dir` (links are not followed), skipping LightWorker's own refs. */
function scanFolder(root: string, dir: string, into: Map<string, FileEntry>, reader: EntryReader): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const path = join(dir, name);
    if (relative(root, path).startsWith(OWN_REFS) || `${relative(root, path)}${sep}` === OWN_REFS) continue;
    let st;
    try {
      st = lstatSync(path, { bigint: true });
    } catch {
      continue;
    }
    if (st.isDirectory()) scanFolder(root, path, into, reader);
    else into.set(path, reader.read(path, st));
  }
}

/** `include.path` / `includeIf.<cond>.path` values of a config file, resolved as git resolves them. */
export function includedFiles(configPath: string, text: string): string[] {
  const out: string[] = [];
  let inInclude = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const header = /^\[\s*([A-Za-z0-9.-]+)(\s+"[^"]*")?\s*\]/.exec(line);
    if (header) {
      inInclude = /^include(if)?$/i.test(header[1]);
      if (!line.slice(header[0].length).trim()) continue;
    }
    const m = inInclude ? /^path\s*=\s*(.*)$/i.exec(line) : null;
    if (!m) continue;
    let value = m[1].trim().replace(/^"(.*)"$/, '$1');
    if (value.startsWith('~/')) value = join(homedir(), value.slice(2));
    out.push(isAbsolute(value) ? value : resolve(dirname(configPath), value));
  }
  return out;
}

/** The config files of a git dir and, transitively (four levels, as far as any sane setup goes), what they include, read into `into`. */
function readConfigFiles(gitDir: string, common: string, into: Map<string, FileEntry>, reader: EntryReader): void {
  let level = [join(common, 'config'), join(common, 'config.worktree'), join(gitDir, 'config.worktree')];
  for (let depth = 0; depth < 5 && level.length; depth++) {
    const next: string[] = [];
    for (const f of level) {
      if (into.has(f)) continue;
      const entry = reader.read(f);
      into.set(f, entry);
      if (!entry) continue;
      try {
        // A linked config is read through its link, as git reads it.
        next.push(...includedFiles(f, 'link' in entry ? readFileSync(f, 'utf8') : entry.bytes.toString('utf8')));
      } catch {
        // a link to nothing: no includes
      }
    }
    level = next;
  }
}

/**
 * The git dir's files LightWorker guards, read now (no git call). With `known` (an earlier capture of
 * the same git dir), a file whose signature is the one recorded then keeps the bytes read then.
 * `settledNs`: how old a ctime must be to be recorded (a test's own margin; SETTLED_NS otherwise).
 */
export function captureGitFiles(
  gitDir: string,
  common: string,
  known?: Pick<RepoState, 'files' | 'signatures'>,
  settledNs?: bigint,
): { files: Map<string, FileEntry>; folders: string[]; signatures: Map<string, string> } {
  const files = new Map<string, FileEntry>();
  const reader = new EntryReader(known, settledNs);
  readConfigFiles(gitDir, common, files, reader);
  for (const f of [join(gitDir, 'HEAD'), join(common, 'packed-refs')]) if (!files.has(f)) files.set(f, reader.read(f));
  const folders = [join(common, 'hooks'), join(common, 'info'), join(common, 'refs')];
  if (gitDir !== common) folders.push(join(gitDir, 'refs'));
  for (const folder of folders) scanFolder(folder.endsWith(`${sep}refs`) ? dirname(folder) : folder, folder, files, reader);
  return { files, folders, signatures: reader.signatures };
}

/**
 * The whole state of `repo` (see RepoState). Run it under the repository lock, so LightWorker's own writes
 * are never half seen. `entries: false` (the capture before a task) leaves the index's entries to be read
 * from its captured bytes only if the check after the task needs them, which it rarely does: one git call
 * fewer per capture.
 */
export async function captureRepo(engine: Engine, repo: string, opts: { entries?: boolean } = {}): Promise<RepoState> {
  const [gitDir, common] = await Promise.all([ownGitDir(repo), commonGitDir(repo)]);
  const { files, folders, signatures } = captureGitFiles(gitDir, common);
  const indexPath = join(gitDir, 'index');
  const index = existsSync(indexPath) ? readFileSync(indexPath) : null;
  const readEntries = opts.entries !== false;
  const [entries, worktree, quick] = await Promise.all([
    index && readEntries ? listIndex(repo) : null,
    sourceStateCommit(engine, repo),
    worktreeFingerprint(repo, gitDir),
  ]);
  return { repo, gitDir, common, files, folders, signatures, index, ...(readEntries ? { indexEntries: entries } : {}), worktree, quick };
}

/** `git ls-files -s -z` of the index (or of the index file `indexFile`), null when git cannot read it. */
async function listIndex(repo: string, indexFile?: string): Promise<string | null> {
  const r = await gitTry(repo, [...SAFE_GIT, '--no-optional-locks', 'ls-files', '-s', '-z'], indexFile ? { env: { GIT_INDEX_FILE: indexFile } } : {});
  return r.exitCode === 0 ? r.stdout : null;
}

/**
 * The index entries of a captured state: as read at capture, or now from the index bytes it kept (a
 * private scratch copy; the entries are in those bytes, a split index's shared part stays in the git dir).
 */
export async function indexEntriesOf(st: RepoState): Promise<string | null> {
  if (st.indexEntries !== undefined) return st.indexEntries;
  if (!st.index) return null;
  const dir = mkdtempSync(join(tmpdir(), 'lw-index-'));
  try {
    writeFileSync(join(dir, 'index'), st.index, { mode: 0o600 });
    return await listIndex(st.repo, join(dir, 'index'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Fields before the path in a porcelain v2 record, by record type. */
const STATUS_FIELDS: Record<string, number> = { '1': 8, '2': 9, u: 10, '?': 1, '!': 1 };

/**
 * The index and working tree of `repo` in one git call: the index file's hash, `git status` (every
 * changed, added or untracked path, tracked files checked against the index as git checks them: stat
 * data, ctime included, and content when racily clean) and each listed path's lstat to the nanosecond
 * (ctime: no write keeps it). Equal fingerprints mean the state commit would be the same, so the after-task
 * check skips the index and working-tree pass (six git calls under the repository lock, serializing tasks).
 * Null when git status fails (the full pass then runs).
 */
export async function worktreeFingerprint(repo: string, gitDir: string): Promise<string | null> {
  const h = createHash('sha256');
  const indexPath = join(gitDir, 'index');
  h.update(existsSync(indexPath) ? readFileSync(indexPath) : 'no index');
  const status = await gitTry(
    repo,
    [...SAFE_GIT, '--no-optional-locks', 'status', '--porcelain=v2', '-z', '--untracked-files=all', '--ignore-submodules=none'],
    { raw: true },
  );
  if (status.exitCode !== 0) return null;
  h.update('\0status\0').update(status.stdout);
  const parts = splitZ(status.stdout);
  for (let i = 0; i < parts.length; i++) {
    const n = STATUS_FIELDS[parts[i][0]];
    if (n === undefined) continue;
    const paths = [parts[i].split(' ').slice(n).join(' ')];
    if (parts[i][0] === '2') paths.push(parts[++i]); // a rename's origin is the next record
    for (const path of paths) {
      try {
        const st = lstatSync(join(repo, path), { bigint: true });
        h.update(`\0${path}\0${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}:${st.mode}`);
      } catch {
        h.update(`\0${path}\0-`);
      }
    }
  }
  return h.digest('hex');
}

/** Index entries as path → "mode blob stage". */
export function parseIndexEntries(text: string | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const rec of (text ?? '').split('\0')) {
    const tab = rec.indexOf('\t');
    if (tab > 0) out.set(rec.slice(tab + 1), rec.slice(0, tab));
  }
  return out;
}

/** packed-refs without LightWorker's own task branches (and their peeled lines). */
export function foreignPackedRefs(entry: FileEntry | undefined): string {
  if (!entry || 'link' in entry) return '';
  const out: string[] = [];
  let skipPeel = false;
  for (const line of entry.bytes.toString('utf8').split('\n')) {
    if (line.startsWith('^')) {
      if (!skipPeel) out.push(line);
      continue;
    }
    skipPeel = / refs\/heads\/lightworker\//.test(line);
    if (!skipPeel) out.push(line);
  }
  return out.join('\n');
}
