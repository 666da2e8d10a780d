import { AppError } from '../core/errors.js';
import type { PullHost } from './pull-host.js';
import { appendEvent } from '../store/events.js';
import { getPull, insertPull, type PullRecord } from '../store/pulls.js';
import { requireTask } from '../store/tasks.js';
import type { Task } from '../tasks/types.js';
import { getAllocation, type Allocation } from '../store/worktrees.js';
import { gitTry } from '../platform/git/git-exec.js';
import { forgeOfRemote, clientFor, parseRemoteUrl, resolveToken, stripUserInfo } from './forge/remote.js';
import { pushBranch } from './forge/push.js';
import type { ForgeTarget } from './forge/types.js';
import { pullBody, pullTitle } from './pull-body.js';
import { verifiedHead } from './pull-host.js';

export interface OpenPullOptions {
  /** The branch name on the remote (default lightworker/<name>-<id>). */
  branch?: string;
  /** The branch the pull request merges into (default: the forge's default branch). */
  base?: string;
  /** Draft (default [pr] draft). */
  draft?: boolean;
  /** Open it for a task that had no verify commands. */
  unverified?: boolean;
  by: string;
}

/** A branch name from the task: lightworker/<slug of its name>-<its id's tail>. */
export function defaultPullBranch(task: Task): string {
  const slug = task.name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `lightworker/${slug ? `${slug}-` : ''}${task.id.slice(-8).toLowerCase()}`;
}

/** What a pull request may be opened from: a completed execute task whose latest commit passed verification. */
function checkPullable(engine: PullHost, task: Task, alloc: Allocation | null, unverified: boolean): asserts alloc is Allocation {
  if (task.kind !== 'execute') throw new AppError('invalid_input', `task ${task.id} is a ${task.kind} task; only execute tasks have a branch to open a pull request from`, { field: 'id' });
  if (task.status !== 'completed') throw new AppError('illegal_transition', `task ${task.id} is ${task.status}; a pull request is opened from a completed task (before accept)`, { from: task.status });
  if (!alloc || !alloc.headCommit || alloc.state !== 'ready') throw new AppError('conflict', `task ${task.id} has no worktree with inspected changes (pruned?); nothing to push`);
  if (alloc.copyOf) throw new AppError('invalid_input', `task ${task.id} ran on a copy of a plain folder, which has no git remote to push to`, { field: 'id' });
  if (!task.verify.length) {
    if (!unverified) throw new AppError('invalid_input', `task ${task.id} had no verify commands; open the pull request with --unverified (unverified: true) if you reviewed the diff`, { field: 'unverified' });
    return;
  }
  const last = verifiedHead(engine, task, alloc);
  if (!last?.ok) throw new AppError('verification_failed', `task ${task.id} did not pass verification; fix it (lightworker followup) before opening a pull request`);
  if (last.commit !== alloc.headCommit) throw new AppError('conflict', `task ${task.id}: the verified commit ${last.commit} is not its latest commit ${alloc.headCommit}; run lightworker reverify first`);
}

/** The URL of the workspace's `remote`, or a refusal naming how to add one. */
export async function remoteUrlOf(workspace: string, remote: string): Promise<string> {
  const r = await gitTry(workspace, ['remote', 'get-url', '--', remote]);
  const url = r.stdout.trim();
  if (r.exitCode !== 0 || !url) {
    throw new AppError('invalid_input', `the repository ${workspace} has no remote "${remote}": add one (git remote add ${remote} URL) or name another in [pr] remote`, { field: 'remote' });
  }
  return url;
}

/** The forge, repository and token behind a workspace's remote, with its client. */
export async function targetOfWorkspace(engine: PullHost, workspace: string): Promise<{ target: ForgeTarget; remoteUrl: string }> {
  const remoteUrl = await remoteUrlOf(workspace, engine.config.pr.remote);
  const f = forgeOfRemote(engine.config, remoteUrl);
  const { token, source } = await resolveToken(f.kind, f.forge, f.tokenEnv, process.env, parseRemoteUrl(remoteUrl)?.host ?? null);
  return { target: { forge: f.forge, kind: f.kind, apiUrl: f.apiUrl, repo: f.repo, token, tokenSource: source }, remoteUrl };
}

/**
 * Push a verified task's latest commit to a branch of its repository's remote and open a pull (merge)
 * request for it, draft by default. Every refusal comes before the push (no remote, no token, a protected
 * or default branch, an open pull request for that branch already, the forge's 401/404), so a refused call
 * changes nothing, locally or remotely; a forge that refuses the request itself after the push leaves the
 * pushed branch, said in the error. Never merges. Records the pull in `pulls` and a `pr.opened` event.
 */
export async function openPullRequest(engine: PullHost, id: string, opts: OpenPullOptions): Promise<PullRecord> {
  const task = requireTask(engine.db, id);
  const existing = getPull(engine.db, task.id);
  if (existing && existing.state === 'open') throw new AppError('conflict', `task ${task.id} already has an open pull request: ${existing.url}; the watcher follows it (lightworker pr ${task.id} --status)`, { url: existing.url });
  const alloc = getAllocation(engine.db, task.id);
  checkPullable(engine, task, alloc, opts.unverified ?? false);
  const { target, remoteUrl } = await targetOfWorkspace(engine, task.workspace);
  const client = clientFor(target);
  const base = opts.base ?? (await client.defaultBranch());
  const branch = opts.branch ?? defaultPullBranch(task);
  if (branch === base) throw new AppError('invalid_input', `branch: "${branch}" is the branch the pull request merges into; choose another name (--branch NAME)`, { field: 'branch' });
  if (await client.isProtected(branch)) throw new AppError('forbidden', `branch "${branch}" is protected on ${target.forge}; push the task under another name (--branch NAME)`, { field: 'branch' });
  const open = await client.findOpen(branch);
  if (open) throw new AppError('conflict', `an open pull request already uses branch "${branch}": ${open.url}; choose another name (--branch NAME)`, { url: open.url });
  await pushBranch(engine.home.root, alloc.path, remoteUrl, alloc.headCommit!, branch, target);
  const draft = opts.draft ?? engine.config.pr.draft;
  let made;
  try {
    made = await client.create({ title: pullTitle(task), body: pullBody(engine, task), head: branch, base, draft });
  } catch (err) {
    if (err instanceof AppError) throw new AppError(err.code, `${err.message} (branch "${branch}" was pushed; nothing changed locally)`, { ...err.details, branch });
    throw err;
  }
  const now = Date.now();
  const pollEveryMs = Math.round(engine.config.pr.poll_s * 1000);
  return engine.write(() => {
    const rec = insertPull(
      engine.db,
      {
        taskId: task.id,
        forge: target.forge,
        kind: target.kind,
        apiUrl: target.apiUrl,
        repo: target.repo,
        remoteUrl: stripUserInfo(remoteUrl),
        tokenSource: target.tokenSource,
        number: made.number,
        url: made.url,
        branch,
        base,
        draft,
        state: 'open',
        headSha: alloc.headCommit!,
        seenComments: [],
        pollEveryMs,
        nextPollAt: now + pollEveryMs,
      },
      now,
    );
    appendEvent(engine.db, task.id, 'pr.opened', { forge: target.forge, kind: target.kind, number: made.number, url: made.url, branch, base, draft, head: alloc.headCommit, by: opts.by });
    return rec;
  });
}
