import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { newId, newToken } from '../core/ids.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { processStartTime } from '../platform/proc/process.js';
import { appendEvent } from '../store/events.js';
import type { Task } from '../tasks/types.js';
import { claimFreeSnapshot, deleteSnapshotRow, getSnapshot, insertSnapshot, listSnapshots, markSnapshotFree, markSnapshotInUse, type SnapshotRow } from '../store/snapshots.js';
import { commonGitDir, git, gitTry, ownGitDir, splitZ } from '../platform/git/git-exec.js';
import { checkContainment } from '../platform/git/guards.js';
import { withLockFile } from '../platform/git/repo-lock.js';
import { mkdirPrivate } from '../core/private-home.js';
import { discardScratchIndex, fillScratchIndex, releaseScratchIndex, takeScratchIndex } from './scratch-index.js';

/**
 * Read-only snapshots: where a plan/explore/review task runs when its worker has no enforced read-only
 * sandbox, so nothing it does can change the user's checkout.
 *
 * A snapshot is a private git repository under `<home>/snapshots/<repo key>/` whose work tree holds the
 * source's HEAD plus the user's uncommitted and untracked (non-ignored) changes, checked out detached
 * at one commit of that state (parent: the user's HEAD, so `git diff HEAD~1` shows the user's changes).
 * It shares no git dir with the user: its objects come through alternates (a per-repository store →
 * the source's object dir), so a worker's `git commit`, `git branch` or `git config` there touches
 * only the snapshot. The state commit is computed without writing into the source: the user's index
 * is copied (keeping its stat cache, so unchanged files are not re-hashed) and `git add -A` runs with
 * the store as git dir and the source as work tree; author and dates are fixed, so the same HEAD and
 * tree always give the same commit — the pool key.
 *
 * Pool: after the task, a snapshot still as LightWorker left it (its git dir fingerprint unchanged) is
 * cleaned (`checkout --force` + `clean -ffdx` only when `git status` shows anything) and kept free, up
 * to `isolation.snapshot_pool` per repository; the next task with the same state reuses it as is, one
 * with another state moves it there (only the differing files are written). Ledger: the `snapshots`
 * table, two-phase; rows whose owner died are swept by takeover and prune.
 */

export interface SnapshotLease {
  id: string;
  path: string;
  repo: string;
  stateCommit: string;
  /** `exact`: a free snapshot already at this state; `moved`: a free one checked out to it; `new`. */
  reuse: 'exact' | 'moved' | 'new';
  timings: { stateMs: number; materializeMs: number };
}

/** Git options for every command LightWorker runs in a snapshot a worker had: no hooks, no fsmonitor. */
const SAFE = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false'];

function repoKey(repo: string): string {
  return createHash('sha256').update(repo).digest('hex').slice(0, 16);
}

/** `<home>/snapshots`, where every snapshot and store lives. */
export function snapshotsRoot(engine: EngineContext): string {
  return join(engine.home.root, 'snapshots');
}

export function storeOf(engine: EngineContext, repo: string): string {
  return join(snapshotsRoot(engine), repoKey(repo), 'store.git');
}

/**
 * The bare store of `repo`'s snapshots: its objects borrow the source's (alternates); its excludes are the source's.
 *
 * The first read-only tasks of a fresh home all arrive here at once (several runners, several slots): the
 * store is built under a lock file beside it, in a scratch folder renamed into place when complete, so no
 * task sees a half-made store (HEAD before config) and none fails on another's `git init` or config lock.
 */
async function ensureStore(engine: EngineContext, repo: string): Promise<string> {
  const store = storeOf(engine, repo);
  const common = await commonGitDir(repo);
  if (!existsSync(join(store, 'HEAD'))) {
    const parent = dirname(store);
    mkdirPrivate(parent);
    await withLockFile(join(parent, 'store.lock'), `create the snapshot store of ${repo}`, async () => {
      if (existsSync(join(store, 'HEAD'))) return;
      // A folder without HEAD is what a crash inside an older, unlocked creation left; a scratch folder, what a
      // builder killed before its rename left (builders hold this lock, so none is at work): start again.
      rmSync(store, { recursive: true, force: true });
      for (const e of readdirSync(parent)) if (e.startsWith('store.git.new-')) rmSync(join(parent, e), { recursive: true, force: true });
      const scratch = `${store}.new-${newToken(6)}`;
      try {
        await git(parent, ['init', '-q', '--bare', scratch]);
        // How the source's files become blobs (line endings, modes, links, case) must match the source's.
        const own = await gitTry(repo, ['config', '--local', '--get-regexp', '^core\\.(autocrlf|eol|safecrlf|filemode|symlinks|ignorecase|precomposeunicode)$']);
        for (const line of own.stdout.split('\n').filter(Boolean)) {
          const [key, ...value] = line.split(' ');
          await git(scratch, ['config', '--file', join(scratch, 'config'), key, value.join(' ')]);
        }
        renameSync(scratch, store);
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    });
  }
  writeIfChanged(join(store, 'objects', 'info', 'alternates'), `${join(common, 'objects')}\n`);
  const exclude = join(common, 'info', 'exclude');
  writeIfChanged(join(store, 'info', 'exclude'), existsSync(exclude) ? readFileSync(exclude, 'utf8') : '');
  return store;
}

/** Write `path` when its text differs, by rename: a git call reading it meanwhile sees the old text or the new, never an empty file. */
function writeIfChanged(path: string, text: string): void {
  try {
    if (readFileSync(path, 'utf8') === text) return;
  } catch {
    // absent
  }
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}-${newToken(6)}`;
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The source's state as one commit: its id, and the commit object's text when it is not HEAD itself. */
interface SourceState {
  commit: string;
  /** The commit object to write into the store before checking it out; null when the state is HEAD. */
  body: string | null;
}

const SNAPSHOT_MESSAGE = 'LightWorker snapshot: HEAD + uncommitted changes\n';
const SNAPSHOT_IDENT = 'LightWorker <lightworker@localhost> 1700000000 +0000';

/**
 * The commit object of a state, with fixed author, committer, dates and message: the same tree and HEAD
 * always give the same id, computed here without a git call (git hashes `commit <size>\0<body>` with
 * the repository's object format: SHA-1, or SHA-256 when ids are 64 hex digits).
 */
function stateCommitOf(tree: string, parent: string | null): SourceState {
  const body = `tree ${tree}\n${parent ? `parent ${parent}\n` : ''}author ${SNAPSHOT_IDENT}\ncommitter ${SNAPSHOT_IDENT}\n\n${SNAPSHOT_MESSAGE}`;
  const algo = tree.length === 64 ? 'sha256' : 'sha1';
  const commit = createHash(algo).update(`commit ${Buffer.byteLength(body)}\0`).update(body).digest('hex');
  return { commit, body };
}

/** Write a state's commit object into the store (idempotent); the id git gives must be the one computed. */
async function writeStateCommit(engine: EngineContext, repo: string, state: SourceState): Promise<void> {
  if (!state.body) return;
  const store = storeOf(engine, repo);
  const id = await git(store, ['--git-dir', store, 'hash-object', '-t', 'commit', '-w', '--stdin'], { input: state.body });
  if (id !== state.commit) throw new Error(`snapshot commit id mismatch: git wrote ${id}, expected ${state.commit}`);
}

/**
 * The source checkout as it is now: HEAD plus every uncommitted and untracked, non-ignored change, as a
 * commit id (HEAD itself when clean). Nothing is written into the source repository (objects go to the
 * store). Two git calls on the critical path: `add -A` (beside `rev-parse HEAD`), then `write-tree`.
 */
async function sourceState(engine: EngineContext, repo: string): Promise<SourceState> {
  const store = await ensureStore(engine, repo);
  const index = takeScratchIndex(store);
  const as = ['--git-dir', store, '--work-tree', repo];
  const env = { GIT_INDEX_FILE: index };
  let reusable = false;
  try {
    const userIndex = join(await ownGitDir(repo), 'index');
    const hasIndex = existsSync(userIndex);
    if (hasIndex) {
      // The copy keeps the index's times: git hashes an entry again when its file is not older than the index
      // ("racily clean"). With the copy's own, later mtime a file rewritten at the same size within the second
      // of the user's last `git add` matched its old stat, and the snapshot held the old content.
      fillScratchIndex(index, userIndex);
    }
    // Two names: not `--verify` (one name only). Fails on an unborn HEAD: no parent then.
    const [heads, addedFast] = await Promise.all([
      gitTry(repo, ['rev-parse', '--quiet', 'HEAD^{commit}', 'HEAD^{tree}']),
      hasIndex ? gitTry(repo, [...SAFE, ...as, 'add', '-A'], { env }) : null,
    ]);
    const [head, headTree] = heads.exitCode === 0 ? heads.stdout.split('\n') : [null, null];
    if (addedFast?.exitCode !== 0) {
      // No index, or one this git dir cannot read (split index): start from HEAD (every file is hashed).
      rmSync(index, { force: true });
      if (head) await git(repo, [...as, 'read-tree', head], { env });
      await git(repo, [...SAFE, ...as, 'add', '-A'], { env });
    }
    const tree = await git(store, ['--git-dir', store, 'write-tree'], { env });
    reusable = true;
    if (head && tree === headTree) return { commit: head, body: null };
    return stateCommitOf(tree, head);
  } finally {
    // After a failed git call the index (or a lock a killed git left beside it) is not reused: the next call
    // would fail on that lock, or start from a half-written index.
    if (reusable) releaseScratchIndex(store, index);
    else discardScratchIndex(index);
  }
}

/** The commit id of the source checkout's current state (see `sourceState`), written into the store. */
export async function sourceStateCommit(engine: EngineContext, repo: string): Promise<string> {
  const state = await sourceState(engine, repo);
  await writeStateCommit(engine, repo, state);
  return state.commit;
}

/**
 * Where a read-only task runs: null (in place) when its worker enforces a read-only sandbox and
 * `isolation.readonly` is `auto`; else a snapshot of the source's current state.
 */
export async function readOnlySnapshot(engine: EngineContext, task: Task, repo: string, workerConfines: boolean): Promise<SnapshotLease | null> {
  if (runsInPlace(engine, workerConfines)) return null;
  return acquireSnapshot(engine, task, repo);
}

/** Does a read-only task of a worker that does (not) enforce a read-only sandbox run in the checkout itself? */
export function runsInPlace(engine: EngineContext, workerConfines: boolean): boolean {
  return workerConfines && engine.config.isolation.readonly === 'auto';
}

/** git in a snapshot, by explicit git dir and work tree (never whatever `.git` a worker left there). */
function inSnapshot(path: string, args: string[]): string[] {
  return [...SAFE, '--git-dir', join(path, '.git'), '--work-tree', path, ...args];
}

/**
 * What in a snapshot's git dir makes git run code or read other objects: config, alternates, hooks,
 * info/attributes. A snapshot whose fingerprint changed while a worker had it is removed, never reused.
 * Null when `.git` is not a real folder (replaced by a link or file).
 */
function gitDirFingerprint(path: string): string | null {
  const dir = join(path, '.git');
  try {
    if (!lstatSync(dir).isDirectory()) return null;
  } catch {
    return null;
  }
  const h = createHash('sha256');
  for (const f of ['config', 'objects/info/alternates', 'info/attributes', 'commondir']) {
    try {
      h.update(`${f}\0${readFileSync(join(dir, f))}\0`);
    } catch {
      h.update(`${f}\0-\0`);
    }
  }
  try {
    for (const hook of readdirSync(join(dir, 'hooks')).sort()) {
      const s = lstatSync(join(dir, 'hooks', hook));
      h.update(`hook\0${hook}\0${s.size}\0${s.mode}\0${s.mtimeMs}\0`);
    }
  } catch {
    h.update('hooks\0-\0');
  }
  return h.digest('hex').slice(0, 32);
}

/**
 * A snapshot of `repo`'s current state for read-only `task`: a free one at the same state as is, else a
 * free one moved to it, else a new one (phase 1 row first). Records `snapshot.acquired` with timings.
 */
export async function acquireSnapshot(engine: EngineContext, task: Task, repo: string): Promise<SnapshotLease> {
  checkContainment(engine.home.root, repo);
  const t0 = performance.now();
  const state = await sourceState(engine, repo);
  const stateCommit = state.commit;
  const t1 = performance.now();
  const owner = { pid: process.pid, start: processStartTime(process.pid) };
  let row = engine.write(() => claimFreeSnapshot(engine.db, repo, stateCommit, task.id, owner, Date.now(), snapshotsRoot(engine) + sep));
  let reuse: SnapshotLease['reuse'] = 'new';
  if (row && row.stateCommit === stateCommit && gitDirFingerprint(row.path) === row.gitHash) reuse = 'exact';
  else if (row && gitDirFingerprint(row.path) === row.gitHash) {
    await writeStateCommit(engine, repo, state);
    const moved = await gitTry(row.path, inSnapshot(row.path, ['checkout', '-q', '--force', '--detach', stateCommit]));
    if (moved.exitCode === 0) {
      engine.write(() => markSnapshotInUse(engine.db, row!.id, stateCommit, gitDirFingerprint(row!.path) ?? ''));
      reuse = 'moved';
    } else {
      removeSnapshot(engine, row);
      row = null;
    }
  } else if (row) {
    removeSnapshot(engine, row);
    row = null;
  }
  if (!row) {
    await writeStateCommit(engine, repo, state);
    row = await createSnapshot(engine, task, repo, stateCommit, owner);
  }
  const timings = { stateMs: round(t1 - t0), materializeMs: round(performance.now() - t1) };
  engine.write(() => appendEvent(engine.db, task.id, 'snapshot.acquired', { id: row!.id, path: row!.path, stateCommit, reuse, timings }));
  return { id: row.id, path: row.path, repo, stateCommit, reuse, timings };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function createSnapshot(engine: EngineContext, task: Task, repo: string, stateCommit: string, owner: { pid: number; start: string | null }): Promise<SnapshotRow> {
  const id = newId();
  const path = join(snapshotsRoot(engine), repoKey(repo), id);
  engine.write(() => insertSnapshot(engine.db, { id, repo, path, taskId: task.id, ownerPid: owner.pid, ownerStart: owner.start }));
  try {
    mkdirPrivate(path);
    await git(path, ['init', '-q', path]);
    writeFileSync(join(path, '.git', 'objects', 'info', 'alternates'), `${join(storeOf(engine, repo), 'objects')}\n`);
    await git(path, inSnapshot(path, ['checkout', '-q', '--force', '--detach', stateCommit]));
  } catch (err) {
    removeSnapshot(engine, getSnapshot(engine.db, id)!);
    throw err;
  }
  engine.write(() => markSnapshotInUse(engine.db, id, stateCommit, gitDirFingerprint(path) ?? ''));
  return getSnapshot(engine.db, id)!;
}

/** Delete a snapshot's folder and its row. */
export function removeSnapshot(engine: EngineContext, row: SnapshotRow): void {
  rmSync(row.path, { recursive: true, force: true });
  engine.write(() => deleteSnapshotRow(engine.db, row.id));
}

/**
 * Give a snapshot back after its task: what the worker wrote there is listed (and discarded); a snapshot
 * whose git dir the worker changed, or beyond the pool size, is removed; else it is cleaned and kept
 * free for the next task. Never throws: a snapshot that cannot be cleaned is removed.
 */
export async function releaseSnapshot(engine: EngineContext, lease: SnapshotLease, taskId: string): Promise<{ discarded: string[]; kept: boolean }> {
  const row = getSnapshot(engine.db, lease.id);
  if (!row) return { discarded: [], kept: false };
  let discarded: string[] = [];
  let kept = false;
  try {
    const intact = gitDirFingerprint(row.path) === row.gitHash;
    if (intact) {
      const st = await git(row.path, inSnapshot(row.path, ['--no-optional-locks', 'status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignored=traditional']), { raw: true });
      discarded = splitZ(st).map((r) => r.slice(3));
      const head = await gitTry(row.path, inSnapshot(row.path, ['rev-parse', '--verify', '--quiet', 'HEAD']));
      const free = listSnapshots(engine.db, row.repo, snapshotsRoot(engine) + sep).filter((s) => s.state === 'free').length;
      if (free < engine.config.isolation.snapshot_pool) {
        if (discarded.length || head.stdout.trim() !== row.stateCommit) {
          await git(row.path, inSnapshot(row.path, ['checkout', '-q', '--force', '--detach', row.stateCommit!]));
          await git(row.path, inSnapshot(row.path, ['clean', '-ffdxq']));
        }
        kept = gitDirFingerprint(row.path) === row.gitHash;
      }
    } else discarded = ['.git (the worker changed the snapshot\'s git dir)'];
  } catch {
    kept = false;
  }
  if (kept) engine.write(() => markSnapshotFree(engine.db, row.id));
  else removeSnapshot(engine, row);
  engine.write(() =>
    appendEvent(engine.db, taskId, 'snapshot.released', {
      id: row.id,
      kept,
      ...(discarded.length ? { discardedWrites: discarded.slice(0, 50), discardedCount: discarded.length } : {}),
    }),
  );
  return { discarded, kept };
}
