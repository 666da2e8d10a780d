import { existsSync, readdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { newToken } from '../core/ids.js';
import type { FileEntry } from './custody-capture.js';
import { git, gitTry, splitZ } from '../platform/git/git-exec.js';
import { SAFE_GIT } from './private-repo.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

/** One packed ref with its peeled line, if any. */
interface PackedRecord {
  ref: string;
  lines: string[];
}

function parsePacked(entry: FileEntry | null): { header: string | null; records: PackedRecord[] } {
  if (!entry || 'link' in entry) return { header: null, records: [] };
  let header: string | null = null;
  const records: PackedRecord[] = [];
  for (const line of entry.bytes.toString('utf8').split('\n')) {
    if (!line) continue;
    if (line.startsWith('#')) header = line;
    else if (line.startsWith('^') && records.length) records.at(-1)!.lines.push(line);
    else records.push({ ref: line.slice(line.indexOf(' ') + 1), lines: [line] });
  }
  return { header, records };
}

const own = (ref: string) => ref.startsWith('refs/heads/lightworker/');

/**
 * packed-refs as it was for every ref but LightWorker's task branches, which stay as found (a `git gc`
 * may have packed a kept task branch meanwhile). Without task branches on either side: the old bytes.
 */
export function restorePackedRefs(path: string, was: FileEntry | null, found: FileEntry | null): void {
  const a = parsePacked(was);
  const b = parsePacked(found);
  const kept = b.records.filter((r) => own(r.ref));
  if (!kept.length && !a.records.some((r) => own(r.ref))) {
    if (!was || 'link' in was) rmSync(path, { force: true });
    else writeFileSync(path, was.bytes);
    return;
  }
  const records = [...a.records.filter((r) => !own(r.ref)), ...kept].sort((x, y) => (x.ref < y.ref ? -1 : x.ref > y.ref ? 1 : 0));
  const header = a.header ?? b.header;
  writeFileSync(path, `${header ? `${header}\n` : ''}${records.flatMap((r) => r.lines).join('\n')}\n`);
}

export interface WorktreeRestore {
  restored: { path: string; change: 'changed' | 'added' | 'removed' }[];
  failed: { path: string; error: string }[];
}

/**
 * Bring the working tree of `repo` from state commit `after` back to `before` (both in the snapshot
 * store), path by path: changed and removed files are written from `before`, added ones removed. Files
 * an accept made meanwhile (still as the accepted commit has them) are left. What was found goes to
 * `<dir>/worktree.patch` first (`git apply` it to get it back).
 */
export async function restoreWorktree(store: string, repo: string, before: string, after: string, accepted: { commit: string; files: string[] }[], dir: string): Promise<WorktreeRestore> {
  const gd = ['--git-dir', store];
  const diff = splitZ(await git(store, [...gd, 'diff-tree', '-r', '-z', '--no-renames', '--name-status', before, after], { raw: true }));
  const changes: { path: string; change: 'changed' | 'added' | 'removed' }[] = [];
  for (let i = 0; i + 1 < diff.length; i += 2) {
    const code = diff[i];
    changes.push({ path: diff[i + 1], change: code === 'A' ? 'added' : code === 'D' ? 'removed' : 'changed' });
  }
  // An accepted file still as its accepted commit has it is the accept's, not the task's.
  const acceptedNow = new Set<string>();
  for (const a of accepted) {
    const paths = a.files.filter((f) => changes.some((c) => c.path === f));
    if (!paths.length) continue;
    const entry = async (rev: string) => new Map(splitZ(await git(store, [...gd, 'ls-tree', '-z', rev, '--', ...paths], { raw: true })).map((l) => [l.slice(l.indexOf('\t') + 1), l.slice(0, l.indexOf('\t'))]));
    const [inCommit, found] = await Promise.all([entry(a.commit), entry(after)]);
    for (const p of paths) if (inCommit.get(p) === found.get(p)) acceptedNow.add(p);
  }
  const todo = changes.filter((c) => !acceptedNow.has(c.path));
  if (!todo.length) return { restored: [], failed: [] };
  mkdirPrivate(dir);
  const patch = await git(store, [...gd, 'diff', '--binary', '--no-color', '--no-ext-diff', '--no-textconv', before, after, '--', ...todo.map((c) => `:(literal)${c.path}`)], { raw: true });
  writeFileSync(join(dir, 'worktree.patch'), patch, { mode: PRIVATE_FILE });
  const failed: WorktreeRestore['failed'] = [];
  const write = todo.filter((c) => c.change !== 'added').map((c) => c.path);
  if (write.length) {
    const index = join(store, `index-custody-${newToken(6)}`);
    const env = { GIT_INDEX_FILE: index };
    const as = [...SAFE_GIT, '--git-dir', store, '--work-tree', repo];
    try {
      await git(repo, [...as, 'read-tree', before], { env });
      const r = await gitTry(repo, [...as, 'checkout-index', '-f', '-q', '-z', '--stdin'], { env, input: write.join('\0') + '\0' });
      if (r.exitCode !== 0) failed.push({ path: write.join(', ').slice(0, 500), error: r.stderr.trim() || `checkout-index exit ${r.exitCode}` });
    } finally {
      rmSync(index, { force: true });
    }
  }
  for (const c of todo.filter((x) => x.change === 'added')) {
    try {
      rmSync(join(repo, c.path), { force: true });
      for (let d = dirname(join(repo, c.path)); d.startsWith(repo + sep) && existsSync(d) && !readdirSync(d).length; d = dirname(d)) rmdirSync(d);
    } catch (err) {
      failed.push({ path: c.path, error: (err as Error).message });
    }
  }
  return { restored: todo, failed };
}
