import { mkdirSync, rmSync, symlinkSync, writeFileSync, chmodSync, existsSync, readdirSync, rmdirSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { appendEvent, latestSeq, listEvents } from '../store/events.js';
import { getAllocation } from '../store/worktrees.js';
import { getTaskState } from '../store/tasks.js';
import { ACTIVE, type Task } from '../tasks/types.js';
import { captureGitFiles, captureRepo, foreignPackedRefs, indexEntriesOf, parseIndexEntries, sameEntry, worktreeFingerprint, type Engine, type FileEntry, type RepoState } from './custody-capture.js';
import { git } from '../platform/git/git-exec.js';
import { SAFE_GIT } from './private-repo.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { storeOf } from './snapshot.js';
import { restorePackedRefs, restoreWorktree } from './custody-restore.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

/**
 * Custody of the user's repository around every task: its state is captured before the task's workspace
 * is prepared and compared after the task's last step (completed, failed, cancelled, timed out, paused
 * for input). Whatever differs is put back at once — git dir files first and without running git, so a
 * planted hook or `core.fsmonitor` never runs in LightWorker's own commands — and what the task left is
 * kept under `<home>/artifacts/<id>/custody-<attempt>/` (the files as found, `worktree.patch` for the
 * working tree), named in a `custody.restored` event.
 *
 * LightWorker's own writes are not the task's: task branches (`refs/heads/lightworker/*`) are not
 * guarded, and an accept made meanwhile (any process of this home, seen through its `task.accepted`
 * event) keeps the branch it moved and the files it wrote. Nothing tells a person's write from a
 * worker's: a commit or edit the user makes in the repository while a task runs is put back too, and
 * kept, and the event says how to take it again (docs/isolation.md, "Custody").
 */

export interface CustodyLease {
  repo: string;
  before: RepoState;
  /** The event log position at capture: accepts recorded after it are LightWorker's own writes. */
  seq: number;
}

export interface RestoredItem {
  area: 'config' | 'hooks' | 'info' | 'HEAD' | 'ref' | 'packed-refs' | 'index' | 'worktree';
  /** Path relative to the repository (`.git/hooks/pre-commit`, `src/a.ts`), or a ref name. */
  path: string;
  change: 'changed' | 'added' | 'removed';
  /** For refs and HEAD: the value before the task and the one found after it. */
  was?: string;
  found?: string;
}

export interface CustodyReport {
  restored: RestoredItem[];
  failed: { path: string; error: string }[];
  artifact: string | null;
}

/**
 * The baseline of each repository with tasks under custody in this process, shared by those tasks: a
 * task starting while another one runs must not take that one's harm for the state to go back to. A
 * baseline is captured when the first task of a repository starts and dropped when the last one ends.
 */
const baselines = new Map<string, Baseline>();

interface Baseline {
  lease: CustodyLease;
  holders: Set<string>;
  /**
   * When (performance.now()) the newest check of the index and working tree that found them as captured
   * started. A task that asked for its check before then has nothing of its own left to show: its worker,
   * verification and everything else of its run had ended, so that check saw all it did (see checkAndRestore).
   */
  cleanSince: number | null;
}

/** Capture the repository's state for `task` (under the repository lock), or join the baseline its running tasks share. */
export async function takeCustody(engine: Engine, task: Task, repo: string): Promise<CustodyLease> {
  return withRepoLock(repo, `capture the repository before ${task.id}`, async () => {
    const shared = baselines.get(repo);
    // A holder whose run ended without giving custody back (its process stopped it mid-way) holds nothing.
    for (const id of shared?.holders ?? []) if (!ACTIVE.has(getTaskState(engine.db, id)?.status ?? 'failed')) shared!.holders.delete(id);
    if (shared?.holders.size) {
      shared.holders.add(task.id);
      return shared.lease;
    }
    const lease = { repo, before: await captureRepo(engine, repo, { entries: false }), seq: latestSeq(engine.db) };
    baselines.set(repo, { lease, holders: new Set([task.id]), cleanSince: null });
    return lease;
  });
}

function releaseBaseline(repo: string, taskId: string): void {
  const shared = baselines.get(repo);
  if (!shared) return;
  shared.holders.delete(taskId);
  if (!shared.holders.size) baselines.delete(repo);
}

interface Accepted {
  commit: string;
  branch: string;
  files: string[];
}

/** Accepts into `repo` recorded since `seq`: their branch moves and files are LightWorker's. */
function acceptedSince(engine: Engine, repo: string, seq: number): Accepted[] {
  const out: Accepted[] = [];
  for (const e of listEvents(engine.db, { after: seq, types: ['task.accepted'], limit: 1000 }).events) {
    const p = e.payload as { commit?: unknown; branch?: unknown; files?: unknown };
    if (typeof p.commit !== 'string' || typeof p.branch !== 'string' || !e.taskId) continue;
    if (getAllocation(engine.db, e.taskId)?.repo !== repo) continue;
    out.push({ commit: p.commit, branch: p.branch, files: Array.isArray(p.files) ? p.files.filter((f): f is string => typeof f === 'string') : [] });
  }
  return out;
}

function areaOf(st: RepoState, path: string): RestoredItem['area'] {
  const rel = relative(st.common, path);
  if (rel === 'packed-refs') return 'packed-refs';
  if (path === join(st.gitDir, 'HEAD')) return 'HEAD';
  if (rel.startsWith(`hooks${sep}`)) return 'hooks';
  if (rel.startsWith(`info${sep}`)) return 'info';
  if (rel.startsWith(`refs${sep}`) || relative(st.gitDir, path).startsWith(`refs${sep}`)) return 'ref';
  return 'config';
}

function shown(st: RepoState, path: string): string {
  if (areaOf(st, path) === 'ref') {
    const base = path.startsWith(st.gitDir + sep) && st.gitDir !== st.common && relative(st.gitDir, path).startsWith('refs') ? st.gitDir : st.common;
    return relative(base, path).split(sep).join('/');
  }
  const rel = relative(st.repo, path);
  return rel.startsWith('..') ? path : rel.split(sep).join('/');
}

const text = (e: FileEntry | undefined) => (!e ? '(none)' : 'link' in e ? `-> ${e.link}` : e.bytes.toString('utf8').trim().slice(0, 200));

/** Put one file back as it was (null: remove it). */
function putBack(path: string, entry: FileEntry): void {
  rmSync(path, { force: true, recursive: true });
  if (!entry) return;
  mkdirSync(dirname(path), { recursive: true });
  if ('link' in entry) symlinkSync(entry.link, path);
  else {
    writeFileSync(path, entry.bytes);
    chmodSync(path, entry.mode);
  }
}

/** Keep what the task left at `path` under the artifact folder (same relative place). */
function keepLeft(dir: string, rel: string, entry: FileEntry | undefined): void {
  if (!entry) return;
  const to = join(dir, 'git', rel.replace(/^(\.\.\/)+/, 'outside/'));
  mkdirPrivate(dirname(to));
  if ('link' in entry) writeFileSync(`${to}.link`, entry.link, { mode: PRIVATE_FILE });
  else writeFileSync(to, entry.bytes, { mode: PRIVATE_FILE });
}

function removeEmptyDirs(from: string, stop: string): void {
  for (let d = from; d.startsWith(stop + sep) && existsSync(d); d = dirname(d)) {
    if (readdirSync(d).length) return;
    rmdirSync(d);
  }
}

/**
 * After the task: compare the repository with its captured state, put back what differs (see the file
 * comment), keep what the task left, and record `custody.restored`. Never throws; null when nothing differed.
 */
export async function returnCustody(engine: Engine, task: Task, lease: CustodyLease): Promise<CustodyReport | null> {
  if (!existsSync(lease.repo)) {
    releaseBaseline(lease.repo, task.id);
    return null;
  }
  // Everything of this task's run has ended by now: a check that starts from here on sees all it did.
  const askedAt = performance.now();
  try {
    return await withRepoLock(lease.repo, `check the repository after ${task.id}`, async () => {
      try {
        return await checkAndRestore(engine, task, lease, askedAt);
      } finally {
        releaseBaseline(lease.repo, task.id);
      }
    });
  } catch (err) {
    releaseBaseline(lease.repo, task.id);
    try {
      engine.write(() => appendEvent(engine.db, task.id, 'custody.failed', { repo: lease.repo, error: (err as Error).message }));
    } catch (e) {
      // A store that cannot be written now (a full disk) must not end the task: it only misses this record.
      process.stderr.write(`lightworker: custody check of ${lease.repo} after task ${task.id} failed (${(err as Error).message}) and could not be recorded: ${(e as Error).message}\n`);
    }
    return null;
  }
}

async function checkAndRestore(engine: Engine, task: Task, lease: CustodyLease, askedAt: number): Promise<CustodyReport | null> {
  const { before } = lease;
  const accepted = acceptedSince(engine, lease.repo, lease.seq);
  const dir = join(engine.home.artifacts, task.id, `custody-${task.attempt}`);
  const restored: RestoredItem[] = [];
  const failed: CustodyReport['failed'] = [];
  const attempt = (path: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      failed.push({ path, error: (err as Error).message });
    }
  };

  // 1. The git dir's files, with no git call.
  const now = captureGitFiles(before.gitDir, before.common, before);
  const packed = join(before.common, 'packed-refs');
  const movedByAccept = (path: string, found: FileEntry | undefined) =>
    accepted.some((a) => path === join(before.common, 'refs', 'heads', ...a.branch.split('/')) && found && !('link' in found) && found.bytes.toString('utf8').trim() === a.commit);
  const paths = new Set([...before.files.keys(), ...now.files.keys()]);
  for (const path of paths) {
    const was = before.files.get(path);
    const found = now.files.get(path);
    if (path === packed) {
      if (foreignPackedRefs(was) === foreignPackedRefs(found)) continue;
      keepLeft(dir, shown(before, path), found);
      attempt(path, () => restorePackedRefs(path, was ?? null, found ?? null));
      restored.push({ area: 'packed-refs', path: shown(before, path), change: 'changed' });
      continue;
    }
    if (sameEntry(was, found)) {
      // Read now with a settled ctime and the same bytes as captured: later checks of this baseline may
      // take it by that signature (a baseline captured just after the files were written has none).
      const sig = now.signatures.get(path);
      if (sig !== undefined) (before.signatures ??= new Map()).set(path, sig);
      continue;
    }
    if (movedByAccept(path, found)) continue;
    const area = areaOf(before, path);
    const change: RestoredItem['change'] = !was ? 'added' : !found ? 'removed' : 'changed';
    keepLeft(dir, shown(before, path), found);
    attempt(path, () => putBack(path, was ?? null));
    if (!was) removeEmptyDirs(dirname(path), before.common);
    restored.push({ area, path: shown(before, path), change, ...(area === 'ref' || area === 'HEAD' ? { was: text(was), found: text(found) } : {}) });
  }

  // 2. The index and the working tree (git runs now, with the config put back), unless one git status shows
  // them as captured: with the git dir's files unchanged too, nothing is left to compare. Tasks of one
  // baseline ending together share that status: one that started after this task asked for its check
  // (under the repository lock, so nothing of LightWorker's ran in between) saw everything this task
  // left, and whatever changed since is not this task's (a task still running is checked when it ends).
  const shared = baselines.get(lease.repo)?.lease === lease ? baselines.get(lease.repo)! : null;
  if (!restored.length && !failed.length && before.quick) {
    if (shared?.cleanSince != null && shared.cleanSince >= askedAt) return null;
    const startedAt = performance.now();
    if ((await worktreeFingerprint(lease.repo, before.gitDir)) === before.quick) {
      if (shared) shared.cleanSince = startedAt;
      return null;
    }
  }
  if (shared) shared.cleanSince = null;
  const acceptedFiles = new Set(accepted.flatMap((a) => a.files));
  const after = await captureRepo(engine, lease.repo);
  const beforeIdx = parseIndexEntries(await indexEntriesOf(before));
  const afterIdx = parseIndexEntries(await indexEntriesOf(after));
  const idxChanged = [...new Set([...beforeIdx.keys(), ...afterIdx.keys()])].filter((p) => !acceptedFiles.has(p) && beforeIdx.get(p) !== afterIdx.get(p));
  if (idxChanged.length || (before.index === null) !== (after.index === null)) {
    const indexPath = join(before.gitDir, 'index');
    if (after.index) {
      mkdirPrivate(dir);
      writeFileSync(join(dir, 'index'), after.index, { mode: PRIVATE_FILE });
    }
    if (existsSync(`${indexPath}.lock`)) failed.push({ path: '.git/index', error: 'the index is locked by a git command running now; left as found' });
    else {
      attempt(indexPath, () => putBack(indexPath, before.index ? { bytes: before.index, mode: 0o644 } : null));
      await keepAcceptedEntries(lease.repo, [...acceptedFiles], afterIdx).catch((err: Error) => failed.push({ path: '.git/index', error: err.message }));
    }
    restored.push({ area: 'index', path: '.git/index', change: 'changed', found: `${idxChanged.length} entr${idxChanged.length === 1 ? 'y' : 'ies'} differed: ${idxChanged.slice(0, 20).join(', ')}` });
  }
  if (after.worktree !== before.worktree) {
    const r = await restoreWorktree(storeOf(engine, lease.repo), lease.repo, before.worktree, after.worktree, accepted, dir);
    for (const p of r.restored) restored.push({ area: 'worktree', path: p.path, change: p.change });
    failed.push(...r.failed);
  }
  if (!restored.length && !failed.length) return null;
  mkdirPrivate(dir);
  const report: CustodyReport = { restored, failed, artifact: dir };
  writeFileSync(join(dir, 'restored.json'), `${JSON.stringify({ repo: lease.repo, ...report }, null, 2)}\n`, { mode: PRIVATE_FILE });
  engine.write(() =>
    appendEvent(engine.db, task.id, 'custody.restored', {
      repo: lease.repo,
      attempt: task.attempt,
      count: restored.length,
      restored: restored.slice(0, 100),
      ...(failed.length ? { failed } : {}),
      artifact: dir,
      note: `the repository was put back as it was before the task; what was found is kept in ${dir} (worktree.patch: git apply it; a ref: git update-ref <ref> <found>). LightWorker cannot tell a person's change from a worker's: if you made these yourself while the task ran, take them from there.`,
    }),
  );
  return report;
}

/** After putting the index back: entries an accept made meanwhile are set again as the accept left them. */
async function keepAcceptedEntries(repo: string, files: string[], afterIdx: Map<string, string>): Promise<void> {
  if (!files.length) return;
  const zero = '0'.repeat(40);
  const lines = files.map((f) => {
    const e = afterIdx.get(f);
    if (!e) return `0 ${zero}\t${f}`;
    const [mode, blob] = e.split(' ');
    return `${mode} ${blob}\t${f}`;
  });
  await git(repo, [...SAFE_GIT, 'update-index', '-z', '--index-info'], { input: lines.join('\0') + '\0' });
}
