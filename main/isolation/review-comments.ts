import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { taskCachelab } from '../cachelab/task-cachelab.js';
import { isAbsolute, join, relative, sep } from 'node:path';
import { AppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import type { Db } from '../store/db.js';
import { appendEvent, listEvents, type EventRow } from '../store/events.js';
import { requireTask } from '../store/tasks.js';
import type { Config } from '../core/config.js';
import { followUpTask } from '../tasks/followup.js';
import type { Authority, Task } from '../tasks/types.js';

export interface ReviewCommentInput {
  file: string;
  line: number;
  endLine?: number;
  text: string;
}

/** A review comment as recorded (a `review.comment` event) and shown. */
export interface ReviewComment {
  seq: number;
  file: string;
  line: number;
  endLine: number;
  text: string;
  quoted: string[];
  by: string;
  at: number;
  /** The attempt the comment's review was sent as (null while unsent). */
  sentAs: number | null;
}

/** Lines quoted per comment, at most (the agent opens the file for more). */
const MAX_QUOTED = 40;
const MAX_FILE_BYTES = 4 * 1024 * 1024;

/** The comment's lines of `file` in the task's worktree; refusals name the file or the line out of range. */
function quoteLines(task: Task, c: ReviewCommentInput): string[] {
  if (!task.worktreePath || !existsSync(task.worktreePath)) throw new AppError('conflict', `task ${task.id} has no worktree to comment on (pruned?)`);
  const file = c.file.replace(/^\.\/+/, '');
  if (!file || isAbsolute(file) || file.split(/[\\/]/).includes('..') || file.split(/[\\/]/)[0] === '.git') throw new AppError('invalid_input', `comments.file: "${c.file}" is not a path inside the task's worktree`, { field: 'comments.file' });
  const abs = join(task.worktreePath, file);
  if (!existsSync(abs) || !statSync(abs).isFile()) throw new AppError('invalid_input', `comments.file: ${file} is not a file in task ${task.id}'s worktree`, { field: 'comments.file' });
  const rel = relative(realpathSync(task.worktreePath), realpathSync(abs));
  if (rel.startsWith('..') || rel.startsWith(sep) || isAbsolute(rel)) throw new AppError('invalid_input', `comments.file: ${file} leads outside the worktree`, { field: 'comments.file' });
  if (statSync(abs).size > MAX_FILE_BYTES) throw new AppError('invalid_input', `comments.file: ${file} is larger than ${MAX_FILE_BYTES} bytes`, { field: 'comments.file' });
  const lines = readFileSync(abs, 'utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  const end = c.endLine ?? c.line;
  if (c.line < 1 || end < c.line || end > lines.length) throw new AppError('invalid_input', `comments.line: ${file} has ${lines.length} lines; ${c.line}${end !== c.line ? `-${end}` : ''} is out of range`, { field: 'comments.line' });
  return lines.slice(c.line - 1, Math.min(end, c.line - 1 + MAX_QUOTED)).map((l) => redactText(l));
}

/** `FILE:LINE[-LINE]` as the CLI takes it. */
export function parseCommentRef(ref: string): { file: string; line: number; endLine?: number } {
  const m = /^(.+):(\d+)(?:-(\d+))?$/.exec(ref.trim());
  if (!m) throw new AppError('invalid_input', `--comment: "${ref}" is not FILE:LINE or FILE:LINE-LINE`, { field: 'comments' });
  const line = Number(m[2]);
  const endLine = m[3] ? Number(m[3]) : undefined;
  return { file: m[1], line, ...(endLine !== undefined ? { endLine } : {}) };
}

function toComment(e: EventRow, sent: Map<number, number>): ReviewComment {
  const p = e.payload as Record<string, unknown>;
  return {
    seq: e.seq,
    file: String(p.file),
    line: Number(p.line),
    endLine: Number(p.endLine ?? p.line),
    text: String(p.text ?? ''),
    quoted: Array.isArray(p.quoted) ? p.quoted.map(String) : [],
    by: String(p.by ?? ''),
    at: e.ts,
    sentAs: sent.get(e.seq) ?? null,
  };
}

/** Every review comment of a task, oldest first, each with the attempt its review went out as. */
export function listReviewComments(db: Db, taskId: string): ReviewComment[] {
  const { events } = listEvents(db, { taskId, types: ['review.comment', 'review.sent'], limit: 5000 });
  const sent = new Map<number, number>();
  for (const e of events) if (e.type === 'review.sent') for (const s of (e.payload.comments as number[]) ?? []) sent.set(s, Number(e.payload.attempt));
  return events.filter((e) => e.type === 'review.comment').map((e) => toComment(e, sent));
}

/** The follow-up turn one review becomes: each comment's file, line range, the quoted lines and the comment. */
export function reviewMessage(comments: ReviewComment[]): string {
  const parts = [`A person reviewed your change and left ${comments.length} comment${comments.length === 1 ? '' : 's'} on the diff. Address each in the worktree, then finish as before.`];
  comments.forEach((c, i) => {
    const range = c.endLine !== c.line ? `lines ${c.line}-${c.endLine}` : `line ${c.line}`;
    parts.push(`${i + 1}. ${c.file} ${range}:\n${c.quoted.map((l) => `   > ${l}`).join('\n')}\n   Comment: ${c.text}`);
  });
  return parts.join('\n\n');
}

/**
 * Record review comments on a task's diff (`review.comment` events: the file, range, the lines quoted from
 * the worktree and the text) and, with `send`, send every unsent comment as one follow-up turn in the task's
 * session and worktree (a new attempt: the runner verifies again), recorded as `review.sent`. In the
 * caller's write transaction; a bad file or line changes nothing.
 */
export function reviewTask(db: Db, config: Config, id: string, opts: { comments: ReviewCommentInput[]; send: boolean; by: string; authority: Authority }): { task: Task; comments: ReviewComment[]; sent: number[] } {
  const task = requireTask(db, id);
  if (task.kind !== 'execute') throw new AppError('invalid_input', `task ${id} is a ${task.kind} task; review comments go on an execute task's diff`, { field: 'id' });
  const quoted = opts.comments.map((c) => ({ c, q: quoteLines(task, c) }));
  for (const { c, q } of quoted) {
    appendEvent(db, id, 'review.comment', { file: c.file.replace(/^\.\/+/, ''), line: c.line, endLine: c.endLine ?? c.line, text: redactText(c.text.trim()), quoted: q, by: opts.by, attempt: task.attempt });
  }
  let sent: number[] = [];
  if (opts.send) {
    const pending = listReviewComments(db, id).filter((c) => c.sentAs === null);
    if (!pending.length) throw new AppError('invalid_input', `task ${id} has no unsent review comments; add one (--comment FILE:LINE "text")`, { field: 'comments' });
    const next = followUpTask(db, config, id, { message: reviewMessage(pending), by: opts.by, authority: opts.authority, cachelab: taskCachelab });
    sent = pending.map((c) => c.seq);
    appendEvent(db, id, 'review.sent', { comments: sent, attempt: next.attempt, by: opts.by, count: sent.length });
  }
  return { task: requireTask(db, id), comments: listReviewComments(db, id), sent };
}
