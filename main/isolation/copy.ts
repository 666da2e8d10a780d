import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { processStartTime } from '../platform/proc/process.js';
import { appendEvent } from '../store/events.js';
import { updateRunFields } from '../store/fence.js';
import type { Task } from '../tasks/types.js';
import { LW_AUTHOR } from '../platform/git/branches.js';
import { git, gitBytes, gitTry } from '../platform/git/git-exec.js';
import { matchAny } from '../platform/git/globs.js';
import { checkContainment, checkDiskReserve } from '../platform/git/guards.js';
import { getAllocation, insertAllocating, markReady, markReleased } from '../store/worktrees.js';
import { branchFor, worktreePathFor } from './worktree.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

/**
 * Copy isolation: a workspace that is not a git repository is copied into a private git repository
 * `<home>/worktrees/<task-id>` (branch `lightworker/<id>`, one base commit of the copy), where the task
 * works as in a worktree: the same change inspection, diff, verification and accept.
 *
 * Budgets (`[isolation.copy]` max_bytes, max_files) are checked on a scan before anything is written;
 * `ignore` globs (a name without `/` matches at any depth, like .gitignore; with `/`, anchored at the
 * folder) are neither copied nor ever copied back (they go to the copy's info/exclude). The SHA-256 of
 * every copied file is kept outside the copy (`<home>/artifacts/<id>/copy-<attempt>.json`): accept copies
 * the task's added, modified and deleted files back only when each original is still exactly what was
 * copied (or still absent), else it refuses naming the files and changes nothing.
 */

export interface CopyEntry {
  rel: string;
  kind: 'file' | 'link';
  size: number;
  mode: number;
}

/** What was copied: original content hashes (files) and link targets, by folder-relative path. */
export interface CopyManifest {
  source: string;
  baseCommit: string;
  files: Record<string, string>;
  links: Record<string, string>;
}

/** True when `workspace` is inside a git work tree. */
export async function isGitWorkspace(workspace: string): Promise<boolean> {
  return (await gitTry(workspace, ['rev-parse', '--is-inside-work-tree'])).stdout.trim() === 'true';
}

function isIgnored(rel: string, ignore: readonly string[]): boolean {
  const anchored = ignore.filter((g) => g.includes('/'));
  if (anchored.length && matchAny(rel, anchored)) return true;
  const names = ignore.filter((g) => !g.includes('/'));
  return names.length > 0 && rel.split('/').some((seg) => matchAny(seg, names));
}

/**
 * Every file and symlink under `folder` that is not ignored, with sizes. Throws AppError naming the
 * budget (`isolation.copy.max_files` / `max_bytes`) as soon as the folder is over it.
 */
export function scanFolder(folder: string, budget: { max_bytes: number; max_files: number; ignore: readonly string[] }): CopyEntry[] {
  const out: CopyEntry[] = [];
  let bytes = 0;
  const over = (what: string) =>
    new AppError(
      'invalid_input',
      `workspace: ${folder} is not a git repository and is over the copy budget: ${what}. Raise it in config.toml [isolation.copy], add ignore globs there, or make the folder a git repository`,
      { field: 'workspace' },
    );
  const walk = (rel: string) => {
    for (const d of readdirSync(join(folder, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${d.name}` : d.name;
      if (isIgnored(p, budget.ignore)) continue;
      if (d.isDirectory()) {
        walk(p);
        continue;
      }
      if (!d.isFile() && !d.isSymbolicLink()) continue; // sockets, fifos, devices: not content
      const st = lstatSync(join(folder, p));
      out.push({ rel: p, kind: d.isFile() ? 'file' : 'link', size: st.size, mode: st.mode });
      bytes += st.size;
      if (out.length > budget.max_files) throw over(`more than ${budget.max_files} files (isolation.copy.max_files = ${budget.max_files})`);
      if (bytes > budget.max_bytes) throw over(`more than ${budget.max_bytes} bytes (isolation.copy.max_bytes = ${budget.max_bytes})`);
    }
  };
  walk('');
  return out;
}

const sha256 = (buf: Buffer) => createHash('sha256').update(buf).digest('hex');

export function manifestPath(engine: EngineContext, taskId: string, attempt: number): string {
  return join(engine.home.artifacts, taskId, `copy-${attempt}.json`);
}

export interface PreparedCopy {
  path: string;
  branch: string;
  baseCommit: string;
}

/**
 * Copy the task's plain folder into `<home>/worktrees/<id>` (budgets first, then a two-phase record:
 * the allocation row, with `copy_of`, exists before anything is written) and commit it as the base.
 * A failure after the record removes what was made and releases the row before rethrowing.
 */
export async function prepareCopy(engine: EngineContext, task: Task): Promise<PreparedCopy> {
  const folder = task.workspace;
  checkContainment(engine.home.root, folder);
  const t0 = performance.now();
  const budget = engine.config.isolation.copy;
  const entries = scanFolder(folder, budget);
  checkDiskReserve(engine.config, engine.home.worktrees);
  const path = worktreePathFor(engine, task.id);
  const branch = branchFor(task.id);
  engine.write(() =>
    insertAllocating(engine.db, {
      taskId: task.id,
      repo: path,
      path,
      branch,
      baseRef: 'copy',
      baseCommit: '',
      ownerPid: process.pid,
      ownerStart: processStartTime(process.pid),
      attempt: task.attempt,
      copyOf: folder,
    }),
  );
  let manifest: CopyManifest;
  try {
    rmSync(path, { recursive: true, force: true }); // an earlier attempt's copy
    mkdirSync(path, { recursive: true });
    manifest = { source: folder, baseCommit: '', files: {}, links: {} };
    for (const e of entries) {
      const dest = join(path, e.rel);
      mkdirSync(dirname(dest), { recursive: true });
      if (e.kind === 'link') {
        const target = readlinkSync(join(folder, e.rel));
        symlinkSync(target, dest);
        manifest.links[e.rel] = target;
      } else {
        const buf = readFileSync(join(folder, e.rel));
        writeFileSync(dest, buf);
        chmodSync(dest, e.mode & 0o777);
        manifest.files[e.rel] = sha256(buf);
      }
    }
    await git(path, ['init', '-q', `--initial-branch=${branch}`, path]);
    writeFileSync(join(path, '.git', 'info', 'exclude'), budget.ignore.map((g) => `${g}\n`).join(''));
    // -f: files the folder's own .gitignore names were copied too, so they are part of the base.
    await git(path, ['add', '-A', '-f', '--', '.']);
    await git(path, [...LW_AUTHOR, 'commit', '-q', '--no-verify', '--allow-empty', '-m', `lightworker: copy of ${folder}`]);
    manifest.baseCommit = await git(path, ['rev-parse', 'HEAD']);
    mkdirPrivate(dirname(manifestPath(engine, task.id, task.attempt)));
    writeFileSync(manifestPath(engine, task.id, task.attempt), JSON.stringify(manifest), { mode: PRIVATE_FILE });
  } catch (err) {
    rmSync(path, { recursive: true, force: true });
    engine.write(() => markReleased(engine.db, task.id, `copy failed: ${(err as Error).message}`));
    throw err;
  }
  const ok = engine.write(() => {
    if (!markReady(engine.db, task.id, Date.now(), manifest.baseCommit)) return false;
    updateRunFields(engine.db, task, { worktreePath: path, branch });
    appendEvent(engine.db, task.id, 'copy.created', {
      from: folder,
      path,
      branch,
      baseCommit: manifest.baseCommit,
      files: entries.length,
      bytes: entries.reduce((n, e) => n + e.size, 0),
      durationMs: Math.round(performance.now() - t0),
      note: `${folder} is not a git repository: the task works in a private git copy; accept copies its changes back`,
    });
    return true;
  });
  if (!ok) throw new AppError('conflict', `task ${task.id}: its copy allocation was swept while being made`);
  return { path, branch, baseCommit: manifest.baseCommit };
}

/** One file of a task's change set, as it is in the task's head commit. */
interface Change {
  rel: string;
  status: 'A' | 'M' | 'D' | 'T';
}

/** Why the original of `c` is not what was copied (null when it is), for the refusal message. */
function originalMoved(folder: string, manifest: CopyManifest, c: Change): string | null {
  const abs = join(folder, c.rel);
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    st = null;
  }
  if (c.rel in manifest.files) {
    if (!st || !st.isFile()) return `${c.rel} (${st ? 'is no longer a file' : 'deleted'} since the copy)`;
    return sha256(readFileSync(abs)) === manifest.files[c.rel] ? null : `${c.rel} (edited since the copy)`;
  }
  if (c.rel in manifest.links) {
    if (!st || !st.isSymbolicLink()) return `${c.rel} (${st ? 'is no longer a symlink' : 'deleted'} since the copy)`;
    return readlinkSync(abs) === manifest.links[c.rel] ? null : `${c.rel} (link changed since the copy)`;
  }
  if (st) return `${c.rel} (created in the folder since the copy)`;
  // A new file: every existing parent must be a folder.
  for (let d = dirname(c.rel); d !== '.' && d !== ''; d = dirname(d)) {
    try {
      if (!lstatSync(join(folder, d)).isDirectory()) return `${c.rel} (${d} is not a folder in the original)`;
      break;
    } catch {
      // absent: created on accept
    }
  }
  return null;
}

/** The task's changes (base → head) in its copy, with their modes and blob ids at head. */
async function changesOf(copy: string, base: string, head: string): Promise<{ changes: Change[]; blobs: Map<string, { mode: string; oid: string }> }> {
  const out = await git(copy, ['diff', '--name-status', '--no-renames', '-z', base, head], { raw: true });
  const parts = out.split('\0').filter(Boolean);
  const changes: Change[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) changes.push({ status: parts[i][0] as Change['status'], rel: parts[i + 1] });
  const blobs = new Map<string, { mode: string; oid: string }>();
  const present = changes.filter((c) => c.status !== 'D').map((c) => c.rel);
  if (present.length) {
    const listing = await git(copy, ['ls-tree', '-z', head, '--', ...present], { raw: true });
    for (const rec of listing.split('\0').filter(Boolean)) {
      const [meta, rel] = [rec.slice(0, rec.indexOf('\t')), rec.slice(rec.indexOf('\t') + 1)];
      const [mode, , oid] = meta.split(' ');
      blobs.set(rel, { mode, oid });
    }
  }
  return { changes, blobs };
}

/**
 * Copy a verified copy-isolated task's changes back into its plain folder: every added, modified and
 * deleted file, only if each original is still what was copied (hash check) — else AppError conflict
 * naming the files, with nothing changed. New contents are staged beside their targets first, then
 * renamed into place. Returns the files written or deleted.
 */
export async function copyBack(engine: EngineContext, task: Task): Promise<string[]> {
  const alloc = getAllocation(engine.db, task.id);
  if (!alloc?.copyOf || !alloc.headCommit) throw new AppError('conflict', `task ${task.id} has no copy with inspected changes to accept`);
  let manifest: CopyManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath(engine, task.id, alloc.attempt), 'utf8')) as CopyManifest;
  } catch {
    throw new AppError('conflict', `task ${task.id}: the record of what was copied is missing; nothing was changed`);
  }
  if (!existsSync(join(alloc.path, '.git'))) throw new AppError('conflict', `task ${task.id}: its copy ${alloc.path} is gone; nothing was changed`);
  const folder = alloc.copyOf;
  const { changes, blobs } = await changesOf(alloc.path, alloc.baseCommit, alloc.headCommit);
  const ignored = changes.filter((c) => isIgnored(c.rel, engine.config.isolation.copy.ignore) && !(c.rel in manifest.files) && !(c.rel in manifest.links));
  const moved = changes.map((c) => originalMoved(folder, manifest, c)).filter((m): m is string => m !== null);
  const blocked = [...moved, ...ignored.map((c) => `${c.rel} (an ignored path: never copied back)`)];
  if (blocked.length)
    throw new AppError('conflict', `${folder} changed since task ${task.id} copied it: ${blocked.join(', ')}; nothing was changed`, {
      files: blocked,
    });
  // Stage every new content beside its target, then swap them in.
  const staged: { tmp: string; dest: string }[] = [];
  const token = `.lightworker-${task.id.slice(-8)}-${process.pid}`;
  try {
    for (const c of changes) {
      if (c.status === 'D') continue;
      const blob = blobs.get(c.rel);
      if (!blob) throw new AppError('conflict', `task ${task.id}: ${c.rel} is missing from its commit; nothing was changed`);
      const dest = join(folder, c.rel);
      mkdirSync(dirname(dest), { recursive: true });
      const tmp = join(dirname(dest), `${token}-${staged.length}`);
      const bytes = await gitBytes(alloc.path, ['cat-file', 'blob', blob.oid]);
      if (blob.mode === '120000') symlinkSync(bytes.toString('utf8'), tmp);
      else writeFileSync(tmp, bytes, { mode: blob.mode === '100755' ? 0o755 : 0o644 });
      staged.push({ tmp, dest });
    }
  } catch (err) {
    for (const s of staged) rmSync(s.tmp, { force: true });
    throw err;
  }
  for (const s of staged) {
    if (lstatSync(s.dest, { throwIfNoEntry: false })?.isDirectory()) rmSync(s.dest, { recursive: true, force: true });
    renameSync(s.tmp, s.dest);
  }
  for (const c of changes) if (c.status === 'D') rmSync(join(folder, c.rel), { force: true });
  return changes.map((c) => c.rel);
}
