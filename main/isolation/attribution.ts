import { accessSync, constants } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import type { EngineContext } from '../tasks/engine-context.js';
import { latestSeq, listEvents } from '../store/events.js';
import { getTaskState } from '../store/tasks.js';
import { ACTIVE, type Task } from '../tasks/types.js';
import { commonGitDir, gitTry } from '../platform/git/git-exec.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { diffSnapshots, HEAD_KEY, isConfigKey, keyedState, snapshotSource, type SourceChange, type SourceSnapshot } from './source-status.js';

/**
 * Who changed the source checkout while a task ran.
 *
 * Each task's boundary check compares a snapshot of the source checkout taken when its workspace was
 * prepared with one taken after the worker's turn. Several tasks run in one repository at once, and
 * LightWorker itself writes to the repository meanwhile, so "it changed" is not "this task changed it":
 *
 * 1. LightWorker's own writes. Both snapshots are taken under the repository lock, which every git
 *    mutation LightWorker makes holds (worktree add/remove, branch create/rename/delete, commits on task
 *    branches, accept), so a snapshot never sees one half-done. Those writes land in places the snapshot
 *    does not look at (`.git/worktrees/<id>`, refs, logs, objects, packed-refs, index of worktrees) or
 *    are filtered by content: `.git/config` is compared key by key minus the `branch.lightworker/*`
 *    sections LightWorker manages (source-status.ts), so a branch rename rewriting the file is not a
 *    change but a planted `core.hooksPath` is. The one own write the checkout itself shows is accept
 *    moving HEAD onto a commit it built: a HEAD move whose every new commit is one a `task.accepted`
 *    event recorded since the snapshot is LightWorker's. So is custody putting back what another task
 *    left (a `custody.restored` event since the snapshot), unless this task's worker named the path.
 * 2. Other tasks. Every task registers its window (snapshot before, snapshot after once inspected) per
 *    repository. Another task could have made a change when it started from a different state of that
 *    path and is still in a turn, or ended holding exactly the state now seen. Among the possible
 *    writers (this task included):
 *    a. those whose worker named the path in its tool calls (the worker's own account: a write tool's
 *       path, a shell command) are blamed, and only they;
 *    b. else, for a task working elsewhere (an execute task in its worktree, a read-only task in a
 *       snapshot), a read-only task running in the checkout itself that could have made it takes it: it
 *       has the source checkout as its working directory, and that task's own check blames it;
 *    c. else this task is blamed, naming every other task that could have made it.
 *
 * Residual limits, without an OS sandbox (nothing tells which process wrote a file): when no worker
 * named the path, two read-only tasks in one checkout are both blamed (each names the other), as are
 * execute tasks that ran at the same time with no read-only task; an execute task escaping its worktree
 * without naming the path while a read-only task runs is reported on the read-only task (the write is
 * still reported, with the file); a worker that names a path it only read can take the blame for it; the
 * user's own edits during a run count as a worker's; windows are known to the process that runs the tasks
 * (a second LightWorker home running tasks in the same repository at the same time is not seen, so its
 * tasks' writes blame ours: more blame, never less); and a worker that knows these internals can forge
 * what they read (same user).
 */

interface Watch {
  taskId: string;
  attempt: number;
  kind: Task['kind'];
  /** Where its worker runs relative paths from (read-only kinds: the workspace in the checkout). */
  workspace: string;
  /** Its worker runs with the source checkout as working directory (a read-only task in place, not in a snapshot). */
  inCheckout: boolean;
  before: SourceSnapshot;
  /** The snapshot of its latest inspection; null while its first turn runs. */
  after: SourceSnapshot | null;
  openedAt: number;
  closedAt: number | null;
}

const watches = new Map<string, Map<string, Watch>>();
let tick = 0;

const isReadOnly = (kind: Task['kind']) => kind !== 'execute';
const identity = (task: Task, inCheckout = isReadOnly(task.kind)) => ({ taskId: task.id, attempt: task.attempt, kind: task.kind, workspace: task.workspace, inCheckout });

function isActive(engine: EngineContext, w: Watch): boolean {
  const t = getTaskState(engine.db, w.taskId);
  return Boolean(t && t.attempt === w.attempt && ACTIVE.has(t.status));
}

/** Drop windows nobody can need: dead ones, and closed ones that ended before every live task began. */
function forgetOld(engine: EngineContext, repo: string): void {
  const map = watches.get(repo);
  if (!map) return;
  const live = [...map.values()].filter((w) => isActive(engine, w));
  const oldest = Math.min(...live.map((w) => w.openedAt));
  for (const w of map.values()) {
    if (live.includes(w)) continue;
    if (w.closedAt === null || w.closedAt < oldest) map.delete(w.taskId);
  }
  if (map.size === 0) watches.delete(repo);
}

/**
 * A snapshot taken under the repository lock, so it never sees one of LightWorker's own operations half
 * done. A repository LightWorker cannot write to (a read-only task exploring someone else's checkout)
 * cannot hold the lock file, and cannot have LightWorker writes to race with either: snapshot it directly.
 */
async function lockedSnapshot(repo: string): Promise<SourceSnapshot> {
  let writable = true;
  try {
    accessSync(await commonGitDir(repo), constants.W_OK);
  } catch {
    writable = false;
  }
  if (!writable) return snapshotSource(repo);
  return withRepoLock(repo, 'snapshot the source checkout', () => snapshotSource(repo));
}

/**
 * How old (ms since its `git status` started) a snapshot of the repository may be to serve as a task's
 * `before`. Sharing stretches that task's window back by at most this much: only more suspects, never
 * a missed write (a write in the stretch still shows as a change), at the price of the residual limits
 * above for that stretch (another task that ended in it, the user's own edits).
 */
export const SHARED_BEFORE_MS = 500;

interface SnapshotRun {
  /** performance.now() when its `git status` started; null while it waits for the previous run. */
  startedAt: number | null;
  promise: Promise<SourceSnapshot>;
}

/** Per database (its event sequence goes with the snapshot) and repository: the newest run (maybe in flight) and the one queued behind it. */
const snapshotRuns = new WeakMap<EngineContext['db'], Map<string, { last: SnapshotRun | null; next: SnapshotRun | null }>>();

/**
 * A snapshot of the source checkout whose `git status` started at or after `notBefore`
 * (performance.now() ms), shared by every task of the repository that asks at about the same time:
 * one snapshot per repository per dispatch burst instead of two `git status` per task (measured in a 200-task drain, npm run bench).
 * Requests while a run is in flight that started too early share the single run queued behind it.
 * The event sequence number is read just before each run starts: an accept finishing in between is
 * then "since", never lost.
 */
export function sharedSnapshot(engine: EngineContext, repo: string, notBefore: number): Promise<SourceSnapshot> {
  let perRepo = snapshotRuns.get(engine.db);
  if (!perRepo) snapshotRuns.set(engine.db, (perRepo = new Map()));
  let runs = perRepo.get(repo);
  if (!runs) perRepo.set(repo, (runs = { last: null, next: null }));
  const { last, next } = runs;
  if (last?.startedAt != null && last.startedAt >= notBefore) return last.promise;
  if (next) return next.promise;
  const r = runs;
  const run: SnapshotRun = { startedAt: null, promise: Promise.resolve() as unknown as Promise<SourceSnapshot> };
  const start = async (): Promise<SourceSnapshot> => {
    if (r.next === run) r.next = null;
    r.last = run;
    run.startedAt = performance.now();
    const seq = latestSeq(engine.db);
    return { ...(await lockedSnapshot(repo)), seq };
  };
  const previous = last?.promise;
  // One run at a time per repository (they would queue on the repository lock anyway).
  run.promise = previous ? previous.then(start, start) : start();
  if (previous) r.next = run;
  run.promise.catch(() => {
    if (r.last === run) r.last = null; // a failed run serves nobody later
  });
  return run.promise;
}

/**
 * Snapshot the source checkout (under the repository lock) for `task` and register its window, so that
 * concurrent tasks' checks can tell its writes from theirs. Call once per attempt, before the worker runs.
 * A snapshot started up to {@link SHARED_BEFORE_MS} ago is shared.
 */
export async function watchSource(engine: EngineContext, repo: string, task: Task, opts: { inCheckout?: boolean } = {}): Promise<SourceSnapshot> {
  const before = await sharedSnapshot(engine, repo, performance.now() - SHARED_BEFORE_MS);
  forgetOld(engine, repo);
  const map = watches.get(repo) ?? new Map<string, Watch>();
  watches.set(repo, map);
  map.set(task.id, { ...identity(task, opts.inCheckout), before, after: null, openedAt: ++tick, closedAt: null });
  return before;
}

/** Could `w` have brought `change.key` to its current state? */
function couldHaveMade(engine: EngineContext, w: Watch, change: SourceChange): boolean {
  if (keyedState(w.before)[change.key] === change.after) return false; // it started with this state
  // In a turn (its first, or a repair turn after an inspection): its own next check compares from its
  // start, so it will see this change too.
  const t = getTaskState(engine.db, w.taskId);
  const inTurn = t?.attempt === w.attempt && (t.status === 'running' || (w.after === null && ACTIVE.has(t.status)));
  if (inTurn) return true;
  return w.after !== null && keyedState(w.after)[change.key] === change.after; // it ended holding exactly this state
}

/** True when every commit HEAD gained is one LightWorker's accept made (recorded since `before`). */
async function movedByAccept(engine: EngineContext, repo: string, before: SourceSnapshot, after: SourceSnapshot): Promise<boolean> {
  if (!before.head || !after.head || before.branchRef !== after.branchRef || before.seq === undefined) return false;
  const ancestor = await gitTry(repo, ['merge-base', '--is-ancestor', before.head, after.head]);
  if (ancestor.exitCode !== 0) return false;
  const gained = (await gitTry(repo, ['rev-list', `${before.head}..${after.head}`])).stdout.split('\n').filter(Boolean);
  const accepted = new Set(
    listEvents(engine.db, { after: before.seq, types: ['task.accepted'], limit: 5000 })
      .events.filter((e) => before.branchRef === `refs/heads/${String(e.payload.branch)}`)
      .map((e) => e.payload.commit),
  );
  return gained.length > 0 && gained.every((c) => accepted.has(c));
}

/** `name` as a whole path inside `text` (JSON of a tool call's input), not as part of a longer one. */
function mentions(text: string, name: string): boolean {
  const escaped = JSON.stringify(name).slice(1, -1).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w./-])${escaped}($|[^\\w.-])`).test(text);
}

/**
 * Did `w`'s worker name this path in its tool calls since its window opened (`worker.tool` events: a
 * write or edit tool's path, a shell command)? That is the worker's own account, so when some possible
 * writers have one and others do not, only they are blamed. Absent evidence proves nothing (a shell
 * script can hide a path), so it only ever narrows the blame, never clears everyone. Workers running
 * elsewhere (execute tasks, read-only ones in a snapshot) count only by the absolute path (the same
 * relative path is their own copy's file); read-only ones in the checkout also by the path relative to
 * their workspace, their working directory.
 */
function namedInToolCalls(engine: EngineContext, repo: string, w: Watch, key: string): boolean {
  if (key === HEAD_KEY || isConfigKey(key)) return false; // HEAD and config keys are no paths
  const abs = join(repo, key);
  const names = [abs];
  const rel = relative(w.workspace, abs);
  if (w.inCheckout && rel && !rel.startsWith('..') && !isAbsolute(rel)) names.push(rel);
  const calls = listEvents(engine.db, { taskId: w.taskId, types: ['worker.tool'], after: w.before.seq ?? 0, limit: 5000 }).events;
  return calls.some((e) => {
    const text = JSON.stringify(e.payload.input ?? null);
    return names.some((n) => mentions(text, n));
  });
}

function describe(repo: string, change: SourceChange): string {
  return change.key === HEAD_KEY ? `${repo} ${change.label}` : join(repo, change.label);
}

function nameTasks(ws: Watch[]): string {
  return ws.map((w) => `${w.taskId} (${w.kind})`).join(', ');
}

export interface SourceAttribution {
  /** Changes this task is blamed for, each naming the path and, when others could have made it, them. */
  violations: string[];
  /** Changes seen during the run that are LightWorker's own or another task's, with who. */
  attributed: string[];
}

/**
 * Snapshot the source checkout again (under the repository lock), close `task`'s window and attribute
 * every change since `before` (see the module comment): LightWorker's own → noted; another task's by its
 * tool calls, or a read-only task's seen by an execute task → noted with who; else a violation of this
 * task, naming the other tasks that could have made it.
 */
export async function attributeSourceChanges(engine: EngineContext, task: Task, repo: string, before: SourceSnapshot): Promise<SourceAttribution> {
  // Its worker has exited: any snapshot started from now on sees all it wrote (shared with tasks ending now).
  const after = await sharedSnapshot(engine, repo, performance.now());
  const map = watches.get(repo) ?? new Map<string, Watch>();
  watches.set(repo, map);
  const others = [...map.values()].filter((w) => w.taskId !== task.id);
  const own = map.get(task.id);
  if (own && own.attempt === task.attempt) Object.assign(own, { after, closedAt: ++tick });
  else map.set(task.id, { ...identity(task), before, after, openedAt: ++tick, closedAt: tick });
  const self = map.get(task.id)!;
  const out: SourceAttribution = { violations: [], attributed: [] };
  const putBack = putBackSince(engine, repo, before.seq ?? 0);
  const changes = diffSnapshots(before, after);
  for (const change of changes) {
    const where = describe(repo, change);
    if (change.key === HEAD_KEY && (await movedByAccept(engine, repo, before, after))) {
      out.attributed.push(`${where} (LightWorker accepting a task)`);
      continue;
    }
    // Custody putting back another task's harm is LightWorker's own write, unless this worker named the path.
    const restorer = putBack.get(change.key);
    if (restorer && !namedInToolCalls(engine, repo, self, change.key)) {
      out.attributed.push(`${where} (put back by LightWorker's custody after task ${restorer})`);
      continue;
    }
    const suspects = others.filter((w) => couldHaveMade(engine, w, change));
    const witnessed = [self, ...suspects].filter((w) => namedInToolCalls(engine, repo, w, change.key));
    const readers = suspects.filter((w) => w.inCheckout);
    if (witnessed.length && !witnessed.includes(self)) {
      out.attributed.push(`${where} (written by ${nameTasks(witnessed)}: its worker's tool calls name the path)`);
      continue;
    }
    if (!witnessed.length && !self.inCheckout && readers.length) {
      out.attributed.push(`${where} (read-only task(s) ${nameTasks(readers)} ran in the checkout then)`);
      continue;
    }
    const also = witnessed.length ? witnessed.filter((w) => w !== self) : suspects;
    const how = `${isReadOnly(task.kind) ? ' by a read-only task' : ''}${witnessed.length ? ", named in the worker's tool calls" : ''}`;
    const alsoText = also.length ? `; ${nameTasks(also)} also ran in this repository then and may have written it` : '';
    out.violations.push(`${where} (written in the source checkout${how}${alsoText})`);
  }
  // A write this worker named that custody put back (after another task) before this check could see it.
  const seen = new Set(changes.map((c) => c.key));
  for (const [path, restorer] of putBack) {
    if (!seen.has(path) && namedInToolCalls(engine, repo, self, path)) {
      out.violations.push(`${join(repo, path)} (written in the source checkout, named in the worker's tool calls) — already put back by custody after task ${restorer}`);
    }
  }
  forgetOld(engine, repo);
  return out;
}

/** Working-tree paths of `repo` that custody put back since event `seq`, with the task whose end did it. */
function putBackSince(engine: EngineContext, repo: string, seq: number): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of listEvents(engine.db, { after: seq, types: ['custody.restored'], limit: 5000 }).events) {
    if (e.payload.repo !== repo) continue;
    for (const r of (e.payload.restored as { area?: string; path?: string }[] | undefined) ?? []) if (r.area === 'worktree' && r.path) out.set(r.path, e.taskId ?? '?');
  }
  return out;
}
