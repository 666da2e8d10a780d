import { AppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { listEvents } from '../store/events.js';
import { getTask, requireTask } from '../store/tasks.js';
import { cancelTask } from '../tasks/ops.js';
import { FAILED_ENDS, TERMINAL, type Task } from '../tasks/types.js';
import { diffLines, missingVerdict, teamEnded, teamMembers, type TeamOutcome } from './team-driver.js';
import { teamTagOf, type Strategy } from '../tasks/contract/team-tag.js';

export interface TeamMemberReport {
  id: string;
  role: string;
  round: number | null;
  /** execute (changes code) or explore/review (reads): map_reduce's contributors and synthesis may be either. */
  kind: Task['kind'];
  worker: string;
  /** The model it was asked to use (best_of_n runs one worker with several), null for the worker's default. */
  model: string | null;
  status: Task['status'];
  attempt: number;
  /** Changed lines of its latest diff (execute tasks), null when none was recorded. */
  diffLines: number | null;
  error: Task['error'];
  /** Review verdict (only a valid one) / explore summary, when the member returned one. */
  verdict: string | null;
  /** A completed review whose answer holds no valid verdict: why (it is not a clean review). */
  noVerdict?: string;
}

export interface TeamReport {
  /** The team's first task (an integration: its own task, which sits in a source's tree), for team_report and accept_team. */
  rootId: string;
  strategy: Strategy;
  /** running, or how the team ended (passed, no_verdict, budget_spent, ranked, completed, merge_conflict, failed, …). */
  state: string;
  outcome: TeamOutcome | null;
  members: TeamMemberReport[];
  /** The task `accept_team` would accept, when there is one. */
  acceptable: string | null;
  /** Integrations: conflicting files, one per line. */
  conflicts: unknown[];
  /** implement_review: the most review rounds it runs; null for the other strategies. */
  budget: number | null;
  /** Integrations: the tasks merged, in merge order, and what became of each; empty for the other strategies. */
  sources: TeamSourceReport[];
}

export interface TeamSourceReport {
  id: string;
  name: string;
  status: Task['status'] | 'missing';
  /** The verified commit the integration merged, once it ran and the merge went through. */
  merged: string | null;
  /** Files whose merge conflicted when this source's turn came. */
  conflicts: string[];
}

function member(db: Db, t: Task): TeamMemberReport {
  const tag = teamTagOf(t.metadata)!;
  const lines = t.kind === 'execute' ? diffLines(db, t.id) : Infinity;
  const res = (t.result ?? null) as { verdict?: string; summary?: string } | null;
  const noVerdict = missingVerdict(t);
  return {
    id: t.id,
    role: tag.role,
    round: tag.round ?? null,
    kind: t.kind,
    worker: t.worker,
    model: t.model,
    status: t.status,
    attempt: t.attempt,
    diffLines: Number.isFinite(lines) ? lines : null,
    error: t.error,
    verdict: noVerdict ? null : (res?.verdict ?? (typeof res?.summary === 'string' ? res.summary.slice(0, 200) : null)),
    ...(noVerdict ? { noVerdict } : {}),
  };
}

/** State of a team that has a final task (map_reduce's synthesis, an integration): that task's. */
function finalTaskState(t: Task | undefined): string {
  if (!t) return 'running';
  if (t.status === 'completed' || t.status === 'accepted') return t.status;
  if (t.status === 'failed' && t.error?.code === 'merge_conflict') return 'merge_conflict';
  return FAILED_ENDS.has(t.status) ? t.status : 'running';
}

/**
 * Cancel every member of a team that has not ended (running ones get a cancel request their leader acts
 * on); the driver then records how the team ended. Run in a write transaction. Returns the ids cancelled.
 */
export function cancelTeam(db: Db, id: string, by: string): string[] {
  const report = teamReport(db, id);
  const open = report.members.filter((m) => !TERMINAL.has(m.status)).map((m) => m.id);
  for (const m of open) cancelTask(db, m, by, 'the team was cancelled');
  return open;
}

/**
 * Where a team stands, given any of its tasks: every member (role, round, worker, status, diff size,
 * verdict), its state, the recorded outcome, and which task `accept_team` takes.
 */
export function teamReport(db: Db, id: string): TeamReport {
  const t = requireTask(db, id);
  const tag = teamTagOf(t.metadata);
  if (!tag) throw new AppError('not_found', `task ${id} is not part of a team`, { field: 'id' });
  const all = teamMembers(db, t.rootId, tag.strategy);
  // An integration is its own team, even inside a source's tree.
  const members = tag.strategy === 'integrate' ? all.filter((m) => m.id === t.id) : all;
  const outcome = tag.strategy === 'integrate' ? null : teamEnded(db, t.rootId, tag.strategy);
  let state = outcome?.outcome ?? 'running';
  let acceptable: string | null = null;
  let conflicts: unknown[] = [];
  if (tag.strategy === 'implement_review') {
    acceptable = outcome?.outcome === 'passed' ? (members.find((m) => m.tag.role === 'implement')?.id ?? null) : null;
  } else if (tag.strategy === 'best_of_n') {
    acceptable = typeof outcome?.winner === 'string' ? outcome.winner : null;
  } else {
    const last = members.find((m) => m.tag.role === 'synthesize' || m.tag.role === 'integrate');
    state = finalTaskState(last);
    acceptable = last && last.kind === 'execute' && last.status === 'completed' ? last.id : null;
    if (last && state === 'merge_conflict') {
      conflicts = listEvents(db, { taskId: last.id, types: ['integrate.conflicts'], limit: 100 }).events.at(-1)?.payload.conflicts as unknown[] ?? [];
    }
  }
  const budget = tag.strategy === 'implement_review' ? (members.find((m) => m.tag.role === 'implement')?.tag.rounds ?? null) : null;
  const sources = tag.strategy === 'integrate' && members[0] ? integrationSources(db, members[0], conflicts) : [];
  // An integration's own task is its team's root: the tree it sits in is a source's.
  const rootId = tag.strategy === 'integrate' && members[0] ? members[0].id : t.rootId;
  return { rootId, strategy: tag.strategy, state, outcome, members: members.map((m) => member(db, m)), acceptable, conflicts, budget, sources };
}

/** Each source of an integration with its state now, the commit merged (integrate.merged) and its conflicting files. */
function integrationSources(db: Db, integration: Task, conflicts: unknown[]): TeamSourceReport[] {
  const ids = teamTagOf(integration.metadata)?.sources ?? [];
  const merged = listEvents(db, { taskId: integration.id, types: ['integrate.merged'], limit: 100 }).events.at(-1)?.payload.merged as { source: string; commit: string }[] | undefined;
  return ids.map((id) => {
    const s = getTask(db, id);
    return {
      id,
      name: s?.name ?? '',
      status: s?.status ?? 'missing',
      merged: merged?.find((m) => m.source === id)?.commit ?? null,
      conflicts: (conflicts as { file?: string; source?: string }[]).filter((c) => c.source === id && typeof c.file === 'string').map((c) => c.file!),
    };
  });
}
