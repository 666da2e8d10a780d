import { isAppError } from '../core/errors.js';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import { redactText } from '../core/redact.js';
import type { PullHost } from './pull-host.js';
import { appendEvent } from '../store/events.js';
import { claimPoll, getPull, updatePull, type PullPatch, type PullRecord } from '../store/pulls.js';
import { requireTask } from '../store/tasks.js';
import { FOLLOWABLE, followUpTask } from '../tasks/followup.js';
import type { Task } from '../tasks/types.js';
import { getAllocation } from '../store/worktrees.js';
import { clientFor, tokenFromSource } from './forge/remote.js';
import { pushBranch } from './forge/push.js';
import { logTail } from './forge/http.js';
import { foldChecks, type ForgeCheck, type ForgeClient, type ForgeComment, type ForgeTarget } from './forge/types.js';
import { verifiedHead } from './pull-host.js';

/** Who sends the fix turns, in the task's record. */
export const WATCHER = 'the pull request watcher';
/** Checks whose logs are fetched per round (the rest are named). */
const MAX_LOGS = 3;
/** How long a poll may hold its claim before another leader may take it again, in ms. */
const CLAIM_MS = 5 * 60_000;

const ENDED: readonly Task['status'][] = [...FOLLOWABLE, 'accepted'];

function baseEvery(engine: PullHost): number {
  return Math.round(engine.config.pr.poll_s * 1000);
}

function backoff(engine: PullHost, every: number): number {
  return Math.min(Math.round(engine.config.pr.max_poll_s * 1000), Math.max(baseEvery(engine), every * 2));
}

/** The follow-up a failing check or new review comments become: names, log tails, the comments themselves. */
export function fixMessage(failing: { check: ForgeCheck; log: string }[], others: string[], comments: ForgeComment[], pull: PullRecord): string {
  const parts = [`Your change is pull request #${pull.number} (${pull.url}) on branch ${pull.branch}.`];
  if (failing.length) {
    parts.push(`These checks failed on commit ${pull.headSha.slice(0, 12)}: ${[...failing.map((f) => f.check.name), ...others].join(', ')}.`);
    for (const f of failing) parts.push(`--- ${f.check.name}: end of its log ---\n${f.log.trim() || f.check.summary || '(no log available)'}`);
  }
  if (comments.length) {
    parts.push(`New review comments on the pull request (${comments.length}):`);
    comments.forEach((c, i) => parts.push(`${i + 1}. ${c.author}${c.path ? ` on ${c.path}${c.line ? `:${c.line}` : ''}` : ''}: ${c.body.trim()}`));
  }
  parts.push('Fix this in the worktree and finish as before; LightWorker verifies again and pushes the fix to the same branch.');
  return redactText(parts.join('\n\n')).slice(0, 30_000);
}

async function targetOf(pull: PullRecord): Promise<ForgeTarget> {
  const { token, source } = await tokenFromSource(pull.kind, pull.forge, pull.tokenSource);
  return { forge: pull.forge, kind: pull.kind, apiUrl: pull.apiUrl, repo: pull.repo, token, tokenSource: source };
}

/** A fix turn ended: push its verified commit, or say why nothing was pushed. */
async function settleFix(engine: PullHost, pull: PullRecord, task: Task, target: ForgeTarget): Promise<PullPatch> {
  const alloc = getAllocation(engine.db, task.id);
  const head = alloc?.headCommit ?? null;
  const verified = alloc ? verifiedHead(engine, task, alloc) : null;
  const good = task.status === 'completed' && head && (task.verify.length === 0 || (verified?.ok && verified.commit === head));
  if (good && head !== pull.headSha) {
    await pushBranch(engine.home.root, alloc!.path, pull.remoteUrl, head!, pull.branch, target);
    engine.write(() => appendEvent(engine.db, task.id, 'pr.pushed', { number: pull.number, branch: pull.branch, head, from: pull.headSha, round: pull.fixRounds }));
    return { fixing: false, headSha: head!, checks: 'pending' };
  }
  const why = good ? 'the fix turn made no new commit' : `the fix turn ended ${task.status}${verified && !verified.ok ? ' (verification failed)' : ''}`;
  engine.write(() => appendEvent(engine.db, task.id, 'pr.fix_failed', { number: pull.number, round: pull.fixRounds, reason: why, status: task.status }));
  return { fixing: false };
}

/**
 * One look at an open pull request: its state (a merge or close on the forge ends the watch), a fix turn
 * that ended (its verified commit is pushed to the same branch), then its checks and review comments. A
 * failing check (its name and log tail) or new comments go to the task's session as one follow-up turn,
 * at most [pr] max_fix_rounds times; never a merge. Polls back off (doubling up to [pr] max_poll_s) while
 * nothing changes; a rate limit waits what the forge said. Returns the record as it is after the look.
 */
export async function pollPull(engine: PullHost, pull: PullRecord, now = Date.now()): Promise<PullRecord> {
  let patch: PullPatch;
  try {
    patch = await lookAt(engine, pull);
    patch.lastError = null;
  } catch (err) {
    const msg = redactText(err instanceof Error ? err.message : String(err));
    const wait = isAppError(err) && err.code === 'rate_limited' && typeof err.details?.retryAfterMs === 'number' ? err.details.retryAfterMs : null;
    const every = backoff(engine, pull.pollEveryMs);
    if (msg !== pull.lastError) engine.write(() => appendEvent(engine.db, pull.taskId, 'pr.poll_failed', { number: pull.number, error: msg, retryInMs: wait ?? every }));
    patch = { lastError: msg, pollEveryMs: every, nextPollAt: now + Math.max(wait ?? 0, every) };
  }
  engine.write(() => updatePull(engine.db, pull.taskId, patch));
  return getPull(engine.db, pull.taskId)!;
}

async function lookAt(engine: PullHost, pull: PullRecord): Promise<PullPatch> {
  const now = Date.now();
  const target = await targetOf(pull);
  const client = clientFor(target);
  const st = await client.status(pull.number);
  if (st.state !== 'open') {
    engine.write(() => appendEvent(engine.db, pull.taskId, st.state === 'merged' ? 'pr.merged' : 'pr.closed', { number: pull.number, url: pull.url, head: st.headSha }));
    return { state: st.state, fixing: false };
  }
  const task = requireTask(engine.db, pull.taskId);
  if (pull.fixing) {
    if (!ENDED.includes(task.status)) return { nextPollAt: now + baseEvery(engine), pollEveryMs: baseEvery(engine) };
    const settled = await settleFix(engine, pull, task, target);
    return { ...settled, nextPollAt: now + baseEvery(engine), pollEveryMs: baseEvery(engine) };
  }
  return { ...(await lookAtChecks(engine, pull, task, client)) };
}

async function lookAtChecks(engine: PullHost, pull: PullRecord, task: Task, client: ForgeClient): Promise<PullPatch> {
  const now = Date.now();
  const checks = await client.checks(pull.number, pull.headSha);
  const folded = foldChecks(checks);
  const { comments, review } = await client.reviews(pull.number);
  const seen = new Set(pull.seenComments);
  const fresh = comments.filter((c) => !seen.has(c.id));
  const changed = folded !== pull.checks || review !== pull.review || fresh.length > 0;
  if (changed) engine.write(() => appendEvent(engine.db, pull.taskId, 'pr.state', { number: pull.number, checks: folded, review, failing: checks.filter((c) => c.state === 'failure').map((c) => c.name), newComments: fresh.length }));
  const patch: PullPatch = { checks: folded, review, pollEveryMs: changed ? baseEvery(engine) : backoff(engine, pull.pollEveryMs) };
  patch.nextPollAt = now + patch.pollEveryMs!;
  const failing = checks.filter((c) => c.state === 'failure');
  const failureKey = failing.length ? `${pull.headSha}:${failing.map((c) => c.name).sort().join(',')}` : null;
  const newFailure = failureKey !== null && failureKey !== pull.sentFailure;
  if (!newFailure && !fresh.length) return patch;
  const max = engine.config.pr.max_fix_rounds;
  const seenAll = [...pull.seenComments, ...fresh.map((c) => c.id)];
  if (pull.fixRounds >= max) {
    engine.write(() => appendEvent(engine.db, pull.taskId, 'pr.fix_limit', { number: pull.number, rounds: pull.fixRounds, max, failing: failing.map((c) => c.name), newComments: fresh.length }));
    return { ...patch, sentFailure: failureKey ?? pull.sentFailure, seenComments: seenAll };
  }
  // A task a person is working with (running a follow-up of their own) gets the fix turn at a later look.
  if (!FOLLOWABLE.includes(task.status)) return { ...patch, pollEveryMs: baseEvery(engine), nextPollAt: now + baseEvery(engine) };
  const tail = engine.config.pr.log_tail_bytes;
  const logs: { check: ForgeCheck; log: string }[] = [];
  for (const c of failing.slice(0, MAX_LOGS)) logs.push({ check: c, log: logTail(await client.checkLog(c).catch((e: unknown) => `(log unavailable: ${e instanceof Error ? e.message : String(e)})`), tail) });
  const message = fixMessage(logs, failing.slice(MAX_LOGS).map((c) => c.name), fresh, pull);
  const round = pull.fixRounds + 1;
  engine.write(() => {
    followUpTask(engine.db, engine.config, task.id, { message, by: WATCHER, authority: 'engine', cachelab: taskCachelab });
    appendEvent(engine.db, task.id, 'pr.fix_requested', { number: pull.number, round, max, failing: failing.map((c) => c.name), comments: fresh.map((c) => ({ author: c.author, path: c.path, line: c.line, body: redactText(c.body).slice(0, 500) })) });
  });
  return { ...patch, fixing: true, fixRounds: round, sentFailure: failureKey ?? pull.sentFailure, seenComments: seenAll, pollEveryMs: baseEvery(engine), nextPollAt: now + baseEvery(engine) };
}

/** Claim a due poll for this leader; false when another leader took it. */
export function claimDuePoll(engine: PullHost, pull: PullRecord, now = Date.now()): boolean {
  return engine.write(() => claimPoll(engine.db, pull.taskId, pull.nextPollAt, now + CLAIM_MS));
}

