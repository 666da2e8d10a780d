import { existsSync, readFileSync } from 'node:fs';
import { isAppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { appendEvent, listEvents } from '../store/events.js';
import { getTask, listTasks } from '../store/tasks.js';
import { createTasks, type CreateContext } from '../tasks/create.js';
import { followUpTask } from '../tasks/followup.js';
import { TERMINAL, type Task } from '../tasks/types.js';
import { reviewRound } from './teams.js';
import { teamTagOf, type TeamTag } from '../tasks/contract/team-tag.js';
import { backInPlaySince, unendedTeamRoots } from '../store/teams.js';

/** Strategies whose next step depends on results, so the driver moves them on. */
const DRIVEN = ['implement_review', 'best_of_n'] as const;

export interface TeamOutcome {
  outcome: string;
  [k: string]: unknown;
}

/** The members of `task`'s team (same tree, same strategy), oldest first. */
export function teamMembers(db: Db, rootId: string, strategy: string): (Task & { tag: TeamTag })[] {
  return listTasks(db, { rootId, limit: 10_000 })
    .reverse()
    .flatMap((t) => {
      const tag = teamTagOf(t.metadata);
      return tag && tag.strategy === strategy ? [{ ...t, tag }] : [];
    });
}

/**
 * The team's outcome: its latest `team.ended` record (on the root task), or null while it goes on. A
 * record is current only while no member was put back in play after it: a member retried after the
 * team ended (e.g. `retry --strategy resume` after a shutdown) makes the team go on; an accept does not.
 */
export function teamEnded(db: Db, rootId: string, strategy: string): TeamOutcome | null {
  const last = listEvents(db, { taskId: rootId, types: ['team.ended'], limit: 1, newest: true }).events.pop();
  if (!last) return null;
  const ids = teamMembers(db, rootId, strategy).map((m) => m.id);
  const moved = backInPlaySince(db, last.seq, ids);
  return moved ? null : (last.payload as TeamOutcome);
}

function endTeam(db: Db, rootId: string, strategy: string, outcome: TeamOutcome): void {
  appendEvent(db, rootId, 'team.ended', { strategy, ...outcome });
}

/**
 * Move a team on after one of its tasks ended (the leader calls it for every task that reaches an end,
 * and for every unfinished team when it starts leading, so a team survives a restart). Idempotent: it
 * reads the team's state from the store and makes at most the one step that is due, in one transaction.
 * - implement_review: a review that found problems, with rounds left → a follow-up turn of the
 *   implementer (same session and worktree) with the findings, and the next review after it; a passed
 *   review, a review without a valid verdict (`no_verdict`), a spent budget or a failed member →
 *   `team.ended` with the outcome.
 * - best_of_n: once every candidate ended → a worker judge over the completed ones (when asked for),
 *   then the ranking (`team.ended` with `ranking` and `winner`).
 */
export function advanceTeam(ctx: CreateContext, taskId: string): TeamOutcome | null {
  const task = getTask(ctx.db, taskId);
  const tag = task && teamTagOf(task.metadata);
  if (!task || !tag || !(DRIVEN as readonly string[]).includes(tag.strategy)) return null;
  if (teamEnded(ctx.db, task.rootId, tag.strategy)) return null;
  const members = teamMembers(ctx.db, task.rootId, tag.strategy);
  return tag.strategy === 'implement_review' ? advanceImplementReview(ctx, task.rootId, members) : advanceBestOfN(ctx, task.rootId, members);
}

/** Every driven team without an end, moved on once (at leader start). Returns how many moved. */
export function advanceAllTeams(ctx: CreateContext): number {
  let moved = 0;
  for (const r of unendedTeamRoots(ctx.db, DRIVEN)) if (advanceTeam({ ...ctx, depth: getTask(ctx.db, r)?.depth ?? ctx.depth }, r)) moved++;
  return moved;
}

interface ReviewResult {
  verdict?: string;
  summary?: string;
  issues?: { file?: string | null; severity?: string; message?: string }[];
  text?: string;
}

/** Passed: an `approve`, or a `comment` without issues. A free-text answer is never a pass. */
function reviewPassed(r: Task): boolean {
  const res = (r.result ?? {}) as ReviewResult;
  return r.schemaValid === true && (res.verdict === 'approve' || (res.verdict === 'comment' && !res.issues?.length));
}

/**
 * Why a completed review has no verdict the team can act on (its answer is not the review contract:
 * free text, or JSON with a verdict outside approve / request_changes / comment), or null when it has one.
 */
export function missingVerdict(r: Task): string | null {
  if (r.kind !== 'review' || r.status !== 'completed' || r.schemaValid === true) return null;
  const res = (r.result ?? null) as (ReviewResult & Record<string, unknown>) | null;
  if (!res || typeof res !== 'object') return 'the review returned no answer';
  if (typeof res.verdict === 'string') return `the review's verdict "${res.verdict.slice(0, 40)}" is not approve, request_changes or comment`;
  if (typeof res.text === 'string') return 'the review answered in free text, not with a verdict';
  return 'the review answered without a valid verdict';
}

/** The findings as the implementer's next turn reads them. */
export function findingsMessage(r: Task, round: number, rounds: number): string {
  const res = (r.result ?? {}) as ReviewResult;
  const issues = (res.issues ?? []).map((i, n) => `${n + 1}. [${i.severity ?? 'medium'}] ${i.file ? `${i.file}: ` : ''}${i.message ?? ''}`);
  const body = issues.length ? issues.join('\n') : (res.summary ?? res.text ?? JSON.stringify(r.result)).slice(0, 8000);
  return [
    `An independent reviewer (${r.worker}) checked your change (review round ${round} of at most ${rounds}) and asks for changes.`,
    res.summary && issues.length ? `Summary: ${res.summary}` : '',
    `Findings:\n${body}`,
    'Fix every finding in this worktree, keep the verification passing, then answer again with the result contract.',
  ].filter(Boolean).join('\n\n');
}

function advanceImplementReview(ctx: CreateContext, rootId: string, members: (Task & { tag: TeamTag })[]): TeamOutcome | null {
  const impl = members.find((m) => m.tag.role === 'implement');
  const reviews = members.filter((m) => m.tag.role === 'review').sort((a, b) => (a.tag.round ?? 0) - (b.tag.round ?? 0));
  const last = reviews[reviews.length - 1];
  if (!impl || !last || !TERMINAL.has(last.status)) return null;
  const round = last.tag.round ?? reviews.length;
  const rounds = impl.tag.rounds ?? round;
  const base = { rounds: round, budget: rounds, implementer: impl.id, lastReview: last.id };
  return ctx.db.transaction((): TeamOutcome => {
    let outcome: TeamOutcome;
    if (last.status !== 'completed') {
      const implFailed = impl.status !== 'completed' && impl.status !== 'accepted';
      const culprit = implFailed ? impl : last;
      outcome = { outcome: `${implFailed ? 'implement' : 'review'}_${culprit.status}`, ...base, reason: culprit.error?.message?.slice(0, 500) ?? culprit.status };
    } else if (missingVerdict(last)) {
      // Neither a pass nor findings to fix: a person decides (sending free text back as "findings" would
      // spend a round on a guess, and counting it as clean would let an unreviewed change through).
      outcome = { outcome: 'no_verdict', ...base, reason: `review ${last.id}: ${missingVerdict(last)}` };
    } else if (reviewPassed(last)) {
      outcome = { outcome: 'passed', ...base };
    } else if (round >= rounds) {
      outcome = { outcome: 'budget_spent', ...base, openFindings: ((last.result as ReviewResult)?.issues ?? []).length };
    } else {
      try {
        followUpTask(ctx.db, ctx.config, impl.id, { message: findingsMessage(last, round, rounds), by: `implement_review (findings of review ${last.id})`, authority: 'engine', cachelab: ctx.cachelab });
      } catch (e) {
        if (!isAppError(e)) throw e;
        outcome = { outcome: 'followup_refused', ...base, reason: e.message };
        endTeam(ctx.db, rootId, 'implement_review', outcome);
        return outcome;
      }
      const fresh = getTask(ctx.db, impl.id)!;
      const [next] = createTasks(ctx, [reviewRound(fresh, last.worker, round + 1, rounds)]);
      const step = { outcome: 'next_round', round: round + 1, review: next.id, implementer: impl.id, findingsOf: last.id };
      appendEvent(ctx.db, rootId, 'team.round', { strategy: 'implement_review', ...step });
      return step;
    }
    endTeam(ctx.db, rootId, 'implement_review', outcome);
    return outcome;
  }).immediate();
}

/** Changed lines of a task's latest diff artifact (+/- lines, headers excluded); Infinity when none. */
export function diffLines(db: Db, taskId: string): number {
  const { events } = listEvents(db, { taskId, types: ['changes.inspected'], limit: 5000 });
  const path = events.length ? events[events.length - 1].payload.diffArtifact : null;
  if (typeof path !== 'string' || !existsSync(path)) return Infinity;
  return readFileSync(path, 'utf8').split('\n').filter((l) => /^[+-]/.test(l) && !/^(\+\+\+|---) /.test(l)).length;
}

/**
 * The rule judge: verified candidates first (completed with verify commands), then completed ones
 * nothing verified, then the rest; inside each group the smallest diff first, then the earliest end.
 */
export function rankByRule(db: Db, candidates: Task[]): string[] {
  const group = (t: Task) => (t.status === 'completed' || t.status === 'accepted' ? (t.verify.length ? 0 : 1) : 2);
  return candidates
    .map((t) => ({ t, g: group(t), lines: diffLines(db, t.id) }))
    .sort((a, b) => a.g - b.g || a.lines - b.lines || (a.t.endedAt ?? Infinity) - (b.t.endedAt ?? Infinity))
    .map((x) => x.t.id);
}

function judgeInput(root: Task, judge: string, completed: Task[]): Parameters<typeof createTasks>[1][number] {
  return {
    kind: 'explore',
    worker: judge,
    workspace: root.workspace,
    mode: root.mode,
    priority: root.priority,
    gateway: root.gateway ?? undefined,
    timeout_s: root.timeoutS,
    name: `best_of_n judge: ${root.name.replace(/^best_of_n \d+\/\d+: /, '').replace(/ \[[^\]]+\]$/, '')} [${judge}]`.slice(0, 200),
    objective: [
      `Judge ${completed.length} competing changes for this objective:`,
      root.objective,
      'Each candidate\'s diff and LightWorker\'s verification are below under "Team inputs". Do not change any file.',
      'Answer with the result contract: `findings` = the candidate task ids, best first (every id once, nothing else); `summary` = why.',
    ].join('\n\n'),
    depends_on: completed.map((c) => c.id),
    parent_id: root.id,
    metadata: { team: { strategy: 'best_of_n', role: 'judge', judge } satisfies TeamTag },
  };
}

function advanceBestOfN(ctx: CreateContext, rootId: string, members: (Task & { tag: TeamTag })[]): TeamOutcome | null {
  const candidates = members.filter((m) => m.tag.role === 'candidate');
  if (!candidates.length || candidates.some((c) => !TERMINAL.has(c.status))) return null;
  const judgeName = candidates[0].tag.judge ?? 'rule';
  const completed = candidates.filter((c) => c.status === 'completed');
  const byRule = rankByRule(ctx.db, candidates);
  return ctx.db.transaction((): TeamOutcome | null => {
    let ranking = byRule;
    let by = 'rule';
    let note: string | null = null;
    if (judgeName !== 'rule' && completed.length >= 2) {
      const judge = members.find((m) => m.tag.role === 'judge');
      if (!judge) {
        const [j] = createTasks(ctx, [judgeInput(candidates[0], judgeName, completed)]);
        appendEvent(ctx.db, rootId, 'team.round', { strategy: 'best_of_n', outcome: 'judging', judge: j.id });
        return { outcome: 'judging', judge: j.id };
      }
      if (!TERMINAL.has(judge.status)) return null;
      const named = judge.status === 'completed' ? ((judge.result as { findings?: unknown } | null)?.findings ?? null) : null;
      const ids = new Set(completed.map((c) => c.id));
      const valid = Array.isArray(named) && named.length === ids.size && named.every((id) => typeof id === 'string' && ids.has(id)) && new Set(named).size === ids.size;
      if (valid) {
        ranking = [...(named as string[]), ...byRule.filter((id) => !ids.has(id))];
        by = `judge ${judge.id}`;
      } else {
        note = judge.status === 'completed' ? `the judge's findings are not the ${ids.size} completed candidate ids; ranked by rule` : `the judge ended ${judge.status}; ranked by rule`;
      }
    } else if (judgeName !== 'rule') {
      note = `only ${completed.length} candidate(s) completed; nothing to judge, ranked by rule`;
    }
    const winner = completed.length ? ranking[0] : null;
    const outcome: TeamOutcome = { outcome: winner ? 'ranked' : 'no_candidate_completed', ranking, winner, by, ...(note ? { note } : {}) };
    endTeam(ctx.db, rootId, 'best_of_n', outcome);
    return outcome;
  }).immediate();
}
