import { existsSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import { unsealTask } from '../tasks/secrets.js';
import type { Task } from '../tasks/types.js';
import { updateRunFields } from '../store/fence.js';
import { branchTip, commitAuthor } from '../platform/git/branches.js';
import { latestEventPayload } from '../store/task-history.js';
import { getAllocation, markReady } from '../store/worktrees.js';
import { inspectReadOnly, inspectWorktree } from './changes.js';
import { treeMarkerEnv } from '../platform/proc/marker.js';
import { gitTry, repoRoot } from '../platform/git/git-exec.js';
import { createPrivateRepo, isPrivateRepo } from './private-repo.js';
import { returnCustody, takeCustody, type CustodyLease } from './custody.js';
import { allocatePorts, portEnv } from './ports.js';
import { readSetup, runSetup } from './setup.js';
import { readOnlySnapshot, releaseSnapshot, runsInPlace, type SnapshotLease } from './snapshot.js';
import { isGitWorkspace, prepareCopy } from './copy.js';
import { watchSource } from './attribution.js';
import type { SourceSnapshot } from './source-status.js';
import { verifyIn } from './verify.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { allocateWorktree, planAllocation, recordAllocation, removeWorktree } from './worktree.js';

/**
 * The runner's view of isolation. The runner calls, in order:
 * prepareWorkspace → (worker turns) → inspectChanges → runVerification [→ repair turn → inspect → verify]…
 */
export interface PreparedWorkspace {
  /** Where the worker runs: the task's worktree (execute) or the workspace itself (read-only kinds). */
  workdir: string;
  /** Extra environment for the worker and verify commands (LIGHTWORKER_PORT, …). */
  env: Record<string, string>;
  /** Opaque state the later steps need (source status before the run, base commit…). */
  state: Record<string, unknown>;
  /** True when an execute task kept the worktree (and branch) of its interrupted attempt. */
  kept?: boolean;
}

export interface PrepareOptions {
  /**
   * Execute tasks: continue in the worktree and branch of the interrupted attempt (`retry --strategy
   * resume`) instead of a fresh one from the base; re-attached from the branch if the folder was pruned.
   * Falls back to a fresh allocation when neither is left.
   */
  keepWorktree?: boolean;
  /**
   * Read-only kinds: the worker enforces a read-only sandbox (`WorkerAdapter.confinesReadOnly`), so the
   * task may run in the workspace itself. Otherwise (the default) it runs in a disposable snapshot.
   */
  readOnlyInPlace?: boolean;
}

export interface ChangeReport {
  ok: boolean;
  changedFiles: string[];
  empty: boolean;
  /** Paths outside the worktree or its allowed paths, escaping symlinks, writes into the source checkout. */
  violations: string[];
  diffArtifact: string | null;
}

export interface VerifyCommandResult {
  command: string[] | string;
  exitCode: number | null;
  durationMs: number;
  outputTail: string;
  timedOut: boolean;
}

export interface VerifyReport {
  ok: boolean;
  results: VerifyCommandResult[];
  /** Full (redacted) output of this verification run, when it ran commands. */
  log?: string | null;
}

/** What prepareWorkspace leaves in `PreparedWorkspace.state`. */
interface WorkspaceState {
  repo: string;
  /** The source checkout before the run; null for a copy (its folder is checked on accept instead). */
  source: SourceSnapshot | null;
  baseCommit?: string;
  branch?: string;
  copied?: string[];
  /** The read-only snapshot the worker runs in, when it does not run in place. */
  snapshot?: SnapshotLease | null;
  /** Copy isolation: the plain folder the task works on a copy of (`repo` is the copy). */
  copyOf?: string;
  /** The execute task's worktree is a private repository (not an old-style `git worktree` kept by resume). */
  privateRepo?: boolean;
  /** The user's repository as it was before the task (put back after it). */
  custody?: CustodyLease;
}

function stateOf(ws: PreparedWorkspace): WorkspaceState {
  const s = ws.state as Partial<WorkspaceState>;
  if (!s.repo || s.source === undefined) throw new Error('PreparedWorkspace.state was not made by prepareWorkspace');
  return s as WorkspaceState;
}

/**
 * Read-only kinds run in the workspace itself (its `git status` is recorded to catch writes). Execute
 * tasks get `<home>/worktrees/<id>` on `lightworker/<id>` from base_ref (default HEAD): containment and
 * disk-reserve checks, two-phase allocation under the repository lock, a 10-port block
 * (LIGHTWORKER_PORT, LIGHTWORKER_PORT_COUNT), then `.lightworker/setup.toml` copy + setup command.
 * Throws AppError (disk_full, invalid_input, git_failed, timed_out, worker_failed…) with nothing half-made
 * left unrecorded. Aborting `signal` (cancel, timeout, shutdown) stops a running setup command.
 */
export async function prepareWorkspace(engine: EngineContext, task: Task, signal?: AbortSignal, opts: PrepareOptions = {}): Promise<PreparedWorkspace> {
  const repo = await repoRoot(task.workspace).catch(async (err: unknown) => {
    if (existsSync(task.workspace) && !(await isGitWorkspace(task.workspace))) return null;
    throw err;
  });
  if (repo === null) return prepareCopied(engine, task);
  // Before anything of the task runs: what the user's repository must look like again after it.
  const custody = await takeCustody(engine, task, repo);
  try {
    const ws = await prepareInRepo(engine, task, repo, signal, opts);
    ws.state.custody = custody;
    return ws;
  } catch (err) {
    await returnCustody(engine, task, custody);
    throw err;
  }
}

async function prepareInRepo(engine: EngineContext, task: Task, repo: string, signal: AbortSignal | undefined, opts: PrepareOptions): Promise<PreparedWorkspace> {
  if (task.kind !== 'execute') {
    const inPlace = runsInPlace(engine, opts.readOnlyInPlace === true);
    const [watched, made] = await Promise.allSettled([watchSource(engine, repo, task, { inCheckout: inPlace }), readOnlySnapshot(engine, task, repo, opts.readOnlyInPlace === true)]);
    if (watched.status === 'rejected') {
      if (made.status === 'fulfilled' && made.value) await releaseSnapshot(engine, made.value, task.id);
      throw watched.reason;
    }
    if (made.status === 'rejected') throw made.reason;
    const [source, snapshot] = [watched.value, made.value];
    const workdir = snapshot ? join(snapshot.path, relative(repo, task.workspace)) : task.workspace;
    return { workdir, env: {}, state: { repo, source, snapshot } satisfies WorkspaceState };
  }
  if (opts.keepWorktree) {
    const kept = await keepWorktree(engine, task, repo);
    if (kept) return kept;
    engine.write(() => appendEvent(engine.db, task.id, 'worktree.not_kept', { reason: 'neither the worktree nor the branch of the earlier attempt is left; starting from the base' }));
  }
  const t0 = performance.now();
  const plan = await planAllocation(engine, task, repo);
  const t1 = performance.now();
  // The source snapshot (for the boundary check) and the allocation are independent: run them together.
  let statusMs = 0;
  const [snap, made] = await Promise.allSettled([
    watchSource(engine, repo, task).then((s) => ((statusMs = performance.now() - t1), s)),
    allocateWorktree(engine, task, plan),
  ]);
  if (made.status === 'rejected') throw made.reason;
  if (snap.status === 'rejected') throw snap.reason;
  const source = snap.value;
  const alloc = made.value;
  const t3 = performance.now();
  const block = await allocatePorts(engine, task.id);
  const t4 = performance.now();
  const env = portEnv(block);
  const uncarried = Object.keys(source.entries).filter((p) => !p.startsWith('.git/')).length;
  const ms = (n: number) => Math.round(n * 10) / 10;
  engine.write(() =>
    appendEvent(engine.db, task.id, 'worktree.allocated', {
      path: alloc.path,
      branch: alloc.branch,
      base: plan.baseRef,
      baseCommit: plan.baseCommit,
      ports: { first: block.base, count: block.size },
      durationMs: ms(t4 - t0),
      timings: {
        checksMs: ms(t1 - t0),
        sourceStatusMs: ms(statusMs),
        lockedMs: ms(alloc.timings.lockedMs),
        gitAddMs: ms(alloc.timings.gitAddMs),
        recordMs: ms(Math.max(0, t3 - t1 - alloc.timings.lockedMs)),
        portsMs: ms(t4 - t3),
      },
      ...(uncarried ? { note: `${uncarried} uncommitted change(s) in ${repo} are not carried into the worktree` } : {}),
    }),
  );
  const setup = await runSetup(
    repo,
    alloc.path,
    readSetup(engine, repo),
    { ...env, ...treeMarkerEnv(engine.home.root, task.id, task.attempt) },
    join(engine.home.artifacts, task.id, `setup-${task.attempt}.log`),
    signal,
  );
  if (setup.copied.length || setup.command) {
    engine.write(() =>
      appendEvent(engine.db, task.id, 'worktree.setup', {
        copied: setup.copied,
        command: setup.command,
        exitCode: setup.exitCode,
        durationMs: setup.durationMs,
        log: setup.log,
      }),
    );
  }
  return {
    workdir: alloc.path,
    env,
    state: { repo, source, baseCommit: plan.baseCommit, branch: plan.branch, copied: setup.copied, privateRepo: true } satisfies WorkspaceState,
  };
}

/**
 * A workspace that is not a git repository: the task (any kind) works in a private git copy, like a
 * worktree; execute tasks get a port block too. A resumed attempt starts from a fresh copy.
 */
async function prepareCopied(engine: EngineContext, task: Task): Promise<PreparedWorkspace> {
  const copy = await prepareCopy(engine, task);
  const env = task.kind === 'execute' ? portEnv(await allocatePorts(engine, task.id)) : {};
  return {
    workdir: copy.path,
    env,
    state: { repo: copy.path, source: null, baseCommit: copy.baseCommit, branch: copy.branch, copied: [], copyOf: task.workspace } satisfies WorkspaceState,
  };
}

/**
 * The interrupted attempt's worktree, as it was (uncommitted changes included), or re-attached from its
 * branch when the folder is gone; its original base commit stays the base of the diff and the boundary
 * check, so the task's changes are judged as a whole. Setup is not run again. Null when nothing is left.
 */
async function keepWorktree(engine: EngineContext, task: Task, repo: string): Promise<PreparedWorkspace | null> {
  const alloc = getAllocation(engine.db, task.id);
  if (!alloc || alloc.repo !== repo) return null;
  let reattached = false;
  if (alloc.state !== 'ready' || !existsSync(join(alloc.path, '.git'))) {
    if (!(await branchTip(repo, alloc.branch))) return null;
    const plan = { repo, path: alloc.path, branch: alloc.branch, baseRef: alloc.baseRef, baseCommit: alloc.baseCommit };
    recordAllocation(engine, task, plan);
    const tip = (await branchTip(repo, alloc.branch))!;
    await withRepoLock(repo, `re-attach the worktree of ${task.id}`, async () => {
      rmSync(alloc.path, { recursive: true, force: true });
      await gitTry(repo, ['worktree', 'prune']);
    });
    await createPrivateRepo(repo, alloc.path, alloc.branch, tip, await commitAuthor(repo, engine.config.git.author));
    engine.write(() => {
      markReady(engine.db, task.id);
      updateRunFields(engine.db, task, { worktreePath: alloc.path, branch: alloc.branch });
    });
    reattached = true;
  }
  const [source, block] = await Promise.all([watchSource(engine, repo, task), allocatePorts(engine, task.id)]);
  const copied = lastSetupCopied(engine, task.id);
  engine.write(() =>
    appendEvent(engine.db, task.id, 'worktree.kept', {
      path: alloc.path,
      branch: alloc.branch,
      baseCommit: alloc.baseCommit,
      reattached,
      ports: { first: block.base, count: block.size },
    }),
  );
  return {
    workdir: alloc.path,
    env: portEnv(block),
    state: { repo, source, baseCommit: alloc.baseCommit, branch: alloc.branch, copied, privateRepo: isPrivateRepo(alloc.path) } satisfies WorkspaceState,
    kept: true,
  };
}

/** Files the setup of an earlier attempt copied into the worktree (they are not the worker's changes). */
function lastSetupCopied(engine: EngineContext, taskId: string): string[] {
  const payload = latestEventPayload(engine.db, taskId, 'worktree.setup');
  const copied = payload ? (JSON.parse(payload) as { copied?: unknown }).copied : undefined;
  return Array.isArray(copied) ? copied.filter((c): c is string => typeof c === 'string') : [];
}

/**
 * After the worker: commit its changes onto the task branch (as LightWorker), write
 * `<home>/artifacts/<id>/diff-<attempt>.patch`, list changed files and report boundary violations
 * (outside allowed_paths, symlinks escaping the worktree, writes into the source checkout). `ok` is false
 * when anything was violated; `empty` flags an execute task that changed nothing. `later` takes the
 * `changes.inspected` write when the caller commits it with its next transaction (default: at once).
 */
export async function inspectChanges(engine: EngineContext, task: Task, ws: PreparedWorkspace, later?: (write: () => void) => void): Promise<ChangeReport> {
  const st = stateOf(ws);
  if (task.kind !== 'execute') {
    // A read-only task's copy is discarded after it: nothing there can reach the folder.
    const violations = st.source ? await inspectReadOnly(engine, task, st.repo, st.source, later) : [];
    return { ok: violations.length === 0, changedFiles: [], empty: true, violations, diffArtifact: null };
  }
  if (!st.baseCommit) throw new Error('PreparedWorkspace.state has no baseCommit for an execute task');
  const r = await inspectWorktree(engine, task, {
    repo: st.repo,
    worktree: ws.workdir,
    baseCommit: st.baseCommit,
    branch: st.branch ?? `lightworker/${task.id}`,
    source: st.source,
    copied: st.copied ?? [],
    privateRepo: st.privateRepo === true,
  }, later);
  return {
    ok: r.violations.length === 0,
    changedFiles: r.changedFiles,
    empty: r.changedFiles.length === 0,
    violations: r.violations,
    diffArtifact: r.diffArtifact,
  };
}

/**
 * Run the task's verify commands in the workdir (argv without a shell; a user's string with /bin/sh -c),
 * each with config.verify.timeout_s and a minimal env (PATH, HOME, LANG, LC_ALL, TMPDIR + ws.env).
 * Records verify.started / verify.command / verify.completed events. No commands → ok with no results.
 */
export async function runVerification(engine: EngineContext, task: Task, ws: PreparedWorkspace, signal: AbortSignal): Promise<VerifyReport> {
  const real = unsealTask(engine.db, engine.home.root, task);
  if (real.verify.length === 0) return { ok: true, results: [] };
  return verifyIn(engine, real, ws.workdir, ws.env, signal);
}

/**
 * After the task's last step (any end): give back a read-only task's snapshot (what the worker wrote
 * there is listed in `snapshot.released` and discarded) or remove its copy (execute copies and
 * worktrees stay for accept); then put the user's repository back as it was before the task wherever it
 * differs (`custody.restored`). The runner calls it before it records the task's end, so whoever sees the
 * task ended sees the repository put back; once per workspace (later calls do nothing). Never throws.
 */
export async function finishWorkspace(engine: EngineContext, task: Task, ws: PreparedWorkspace | null): Promise<void> {
  const st = (ws?.state ?? {}) as Partial<WorkspaceState> & { finished?: boolean };
  if (st.finished) return;
  st.finished = true;
  if (st.snapshot) await releaseSnapshot(engine, st.snapshot, task.id).catch(() => undefined);
  if (st.copyOf && task.kind !== 'execute') await releaseWorkspace(engine, task.id, 'read-only task ended').catch(() => undefined);
  if (st.custody) await returnCustody(engine, task, st.custody);
}

/**
 * Remove a task's worktree and free its ports now (the branch is kept unless it holds nothing new).
 * Prune does this later for ended tasks anyway; call it when a worktree is certainly no longer wanted.
 */
export async function releaseWorkspace(engine: EngineContext, taskId: string, reason: string): Promise<void> {
  const alloc = getAllocation(engine.db, taskId);
  if (!alloc || alloc.state === 'released') return;
  if (alloc.state === 'allocating') throw new AppError('conflict', `task ${taskId}: its worktree is still being allocated`);
  await removeWorktree(engine, alloc, { reason, deleteBranch: true });
}
