import { AppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import { listEvents } from '../store/events.js';
import { requireTask } from '../store/tasks.js';
import type { CreateContext } from '../tasks/create.js';
import { followUpTask } from '../tasks/followup.js';
import type { Task } from '../tasks/types.js';

const MESSAGE_CHARS = 600;

function cut(s: string, max: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}

/**
 * A summary of the task's latest attempt, from its events (what the worker said and ran, the files it
 * changed, LightWorker's verification, how it ended): what the next worker needs to carry on without the
 * previous worker's native session. Bounded (about 6 KB): the latest messages and tools only.
 */
export function summarizeTranscript(db: Db, task: Task): string {
  const started = listEvents(db, { taskId: task.id, types: ['task.status'], limit: 200, newest: true }).events.filter((e) => e.payload.to === 'starting').pop();
  const { events } = listEvents(db, { taskId: task.id, after: started?.seq ?? 0, types: ['worker.message', 'worker.tool', 'worker.completed', 'changes.inspected', 'verify.completed'], limit: 2000 });
  const said = events.filter((e) => e.type === 'worker.message' || e.type === 'worker.completed').map((e) => cut(String(e.payload.text ?? ''), MESSAGE_CHARS)).filter(Boolean).slice(-5);
  const tools = events.filter((e) => e.type === 'worker.tool').map((e) => `${String(e.payload.name)} (${String(e.payload.status ?? 'completed')})${e.payload.input ? `: ${cut(JSON.stringify(e.payload.input), 160)}` : ''}`).slice(-12);
  const changes = events.filter((e) => e.type === 'changes.inspected').pop();
  const verify = events.filter((e) => e.type === 'verify.completed').pop();
  const lines = [`Attempt ${task.attempt} of this task ran on worker ${task.worker} and ended ${task.status}${task.error ? ` (${task.error.code}: ${cut(task.error.message, 800)})` : ''}.`];
  if (said.length) lines.push('What it said (latest last):', ...said.map((s) => `- ${s}`));
  if (tools.length) lines.push('Tools it used (latest last):', ...tools.map((s) => `- ${s}`));
  const files = Array.isArray(changes?.payload.changedFiles) ? (changes.payload.changedFiles as string[]) : [];
  if (files.length) lines.push(`Files it changed (committed on this branch): ${files.slice(0, 50).join(', ')}`);
  if (verify) lines.push(`LightWorker's verification: ${verify.payload.ok === true ? 'passed' : 'FAILED'}${typeof verify.payload.log === 'string' && verify.payload.ok !== true ? `\n${verify.payload.log.slice(-1500)}` : ''}`);
  return lines.join('\n');
}

/**
 * `handoff ID --worker W`: a new attempt of an ended task on another worker, in the same worktree and
 * branch (followUpTask with a worker switch), whose first turn carries a summary of the previous
 * attempt. Run in a write transaction. Refused for a task that is still running, or for the same worker
 * (that is a follow-up, not a handoff).
 */
export function handoffTask(ctx: CreateContext, id: string, worker: string, opts: { by: string; note?: string }): Task {
  const t = requireTask(ctx.db, id);
  if (t.worker === worker) throw new AppError('invalid_input', `worker: task ${id} already runs on ${worker}; a handoff goes to another worker`, { field: 'worker' });
  if (ctx.knownWorkers && !ctx.knownWorkers.includes(worker)) {
    throw new AppError('invalid_input', `worker: unknown worker "${worker}" (known: ${ctx.knownWorkers.join(', ')})`, { field: 'worker' });
  }
  const message = [
    `You take over this task from another agent (${t.worker}). Its work so far is in this worktree, on this branch.`,
    summarizeTranscript(ctx.db, t),
    opts.note ? `Note from ${opts.by}: ${opts.note}` : '',
    'Check what is already done, finish the objective, then answer with the result contract.',
  ].filter(Boolean).join('\n\n');
  return followUpTask(ctx.db, ctx.config, id, { message, worker, by: opts.by, authority: ctx.authority, cachelab: ctx.cachelab });
}
