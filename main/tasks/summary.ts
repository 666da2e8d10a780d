import type { TaskErrorCode } from '../core/errors.js';
import type { Task } from './types.js';

/** Longest error message a summary carries; the full text stays in get_task. */
export const SUMMARY_ERROR_CHARS = 200;

/**
 * A task in a few fields: what an agent needs to follow many tasks (list_tasks, wait_tasks) without
 * paying for objectives, results and routes. Absent fields are omitted, not null.
 */
export interface TaskSummary {
  id: string;
  name: string;
  status: Task['status'];
  kind: Task['kind'];
  worker: string;
  updatedAt: number;
  /** The error, its message cut to SUMMARY_ERROR_CHARS characters (with "…"). */
  error?: { code: TaskErrorCode; message: string };
  /** Upstream tasks awaiting a person that this task waits on. */
  waitingOn?: string[];
  /** A waiting_input task: what it asks a person (answer with answer_task). */
  needs?: NeedsInput;
}

/** The pending request of a task waiting for a person, in a few fields. */
export interface NeedsInput {
  request: string;
  kind: 'permission' | 'question' | 'budget';
  /** The question, or the permission as "Tool: command". */
  asks: string;
  options?: string[];
  expiresAt: number;
}

/** The summary of `t`; `waitingOn` as computed by the caller (empty or absent: omitted). */
export function summarizeTask(t: Task, waitingOn?: string[]): TaskSummary {
  const s: TaskSummary = { id: t.id, name: t.name, status: t.status, kind: t.kind, worker: t.worker, updatedAt: t.updatedAt };
  if (t.error) s.error = { code: t.error.code, message: cutText(t.error.message, SUMMARY_ERROR_CHARS) };
  if (waitingOn?.length) s.waitingOn = waitingOn;
  return s;
}

/** `text` cut to at most `max` characters (code points), ending in "…" when cut. */
export function cutText(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : chars.slice(0, max - 1).join('') + '…';
}
