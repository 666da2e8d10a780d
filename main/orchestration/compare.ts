import { AppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { listEvents } from '../store/events.js';
import { listTasks, requireTask } from '../store/tasks.js';
import { createTasks, type CreateContext } from '../tasks/create.js';
import type { ParsedTaskInput } from '../tasks/schema.js';
import type { Task } from '../tasks/types.js';
import { chainReviews } from './review.js';

export interface CompareRequest {
  /** The one execute task every worker gets; `worker` is replaced per candidate. */
  task: ParsedTaskInput;
  workers: string[];
  reviewBy?: string;
}

/**
 * One execute task per worker, all in one tree (the first candidate is its root) so they are shown,
 * limited and reported together; each runs in its own worktree. With `reviewBy`, every candidate gets
 * a read-only review task by that worker. Run inside a write transaction.
 */
export function createComparison(ctx: CreateContext, req: CompareRequest): { candidates: Task[]; reviews: Task[] } {
  const workers = [...new Set(req.workers)];
  if (workers.length !== req.workers.length) throw new AppError('invalid_input', 'workers: lists a worker twice', { field: 'workers' });
  if (req.reviewBy && workers.includes(req.reviewBy)) {
    throw new AppError('invalid_input', `review_by: "${req.reviewBy}" is one of the compared workers; pick another worker to review`, { field: 'review_by' });
  }
  const inputs = workers.map((worker) => ({
    ...req.task,
    kind: 'execute' as const,
    worker,
    name: `${req.task.name ?? firstLine(req.task.objective)} [${worker}]`.slice(0, 200),
    metadata: { ...(req.task.metadata ?? {}), compare: { workers } },
  }));
  const candidates = createTasks(ctx, inputs);
  const reviews = req.reviewBy ? chainReviews(ctx, candidates, req.reviewBy) : [];
  return { candidates, reviews };
}

export interface CandidateReport {
  id: string;
  worker: string;
  status: Task['status'];
  error: Task['error'];
  usage: Task['usage'];
  durationMs: number | null;
  branch: string | null;
  /** From get_task_diff when that command exists in this build, else null. */
  diff: unknown;
  /** The task's last verification (ok, commands run, duration, log tail), when it was verified. */
  verification: Record<string, unknown> | null;
  review: { id: string; worker: string; status: Task['status']; result: unknown } | null;
}

/** Side-by-side state of a comparison, given any task of its tree. */
export async function compareReport(ctx: CreateContext, id: string, diffOf: (id: string) => Promise<unknown>): Promise<{ rootId: string; objective: string; candidates: CandidateReport[] }> {
  const t = requireTask(ctx.db, id);
  const tree = listTasks(ctx.db, { rootId: t.rootId, limit: 10_000 }).reverse();
  const candidates = tree.filter((x) => x.kind === 'execute' && x.metadata && typeof x.metadata === 'object' && 'compare' in x.metadata);
  if (!candidates.length) throw new AppError('not_found', `task ${id} is not part of a comparison`, { field: 'id' });
  const out: CandidateReport[] = [];
  for (const c of candidates) {
    const review = tree.find((x) => x.kind === 'review' && (x.metadata as { review_of?: string }).review_of === c.id);
    out.push({
      id: c.id,
      worker: c.worker,
      status: c.status,
      error: c.error,
      usage: c.usage,
      durationMs: c.startedAt && c.endedAt ? c.endedAt - c.startedAt : null,
      branch: c.branch,
      diff: await diffOf(c.id),
      verification: lastVerification(ctx.db, c.id),
      review: review ? { id: review.id, worker: review.worker, status: review.status, result: review.result } : null,
    });
  }
  return { rootId: t.rootId, objective: candidates[0].objective, candidates: out };
}

/** The last `verify.completed` event (isolation/verify.ts) of the task, its log cut to the tail. */
export function lastVerification(db: Db, taskId: string): Record<string, unknown> | null {
  const { events } = listEvents(db, { taskId, types: ['verify.completed'], limit: 5000 });
  const v = events.pop();
  if (!v) return null;
  const { log, ...rest } = v.payload;
  return { ...rest, logTail: typeof log === 'string' ? log.slice(-2000) : null };
}

function firstLine(s: string): string {
  const line = s.trim().split('\n')[0].trim();
  return line.length > 60 ? line.slice(0, 57) + '…' : line;
}
