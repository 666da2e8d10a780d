import { prep, type Db } from './db.js';

export const REQUEST_KINDS = ['permission', 'question', 'budget'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
export type RequestStatus = 'pending' | 'answered' | 'expired' | 'cancelled';
export type RequestDecision = 'allow' | 'deny' | 'answer';

/** What a running worker asked a person. Text fields are stored redacted. */
export interface TaskRequest {
  id: string;
  taskId: string;
  attempt: number;
  kind: RequestKind;
  status: RequestStatus;
  worker: string;
  sessionId: string | null;
  /** What was asked, in words (a question, or a one-line description of the permission). */
  question: string;
  /** Permission requests: the tool (`Bash`, `WebFetch`…) and its command or target. */
  tool: string | null;
  command: string | null;
  /** Permission requests: what it reaches (`network`, `outside allowed_paths`, a path…). */
  scope: string | null;
  reason: string | null;
  /** Suggested answers a person can pick with one click. */
  options: string[];
  decision: RequestDecision | null;
  answer: string | null;
  /** A granted permission applies to the same tool and command for the rest of the task. */
  remember: boolean;
  answeredBy: string | null;
  createdAt: number;
  expiresAt: number;
  answeredAt: number | null;
}

interface RequestRow {
  id: string;
  task_id: string;
  attempt: number;
  kind: RequestKind;
  status: RequestStatus;
  worker: string;
  session_id: string | null;
  question: string;
  tool: string | null;
  command: string | null;
  scope: string | null;
  reason: string | null;
  options: string;
  decision: RequestDecision | null;
  answer: string | null;
  remember: number;
  answered_by: string | null;
  created_at: number;
  expires_at: number;
  answered_at: number | null;
}

function toRequest(r: RequestRow): TaskRequest {
  return {
    id: r.id, taskId: r.task_id, attempt: r.attempt, kind: r.kind, status: r.status, worker: r.worker, sessionId: r.session_id,
    question: r.question, tool: r.tool, command: r.command, scope: r.scope, reason: r.reason, options: JSON.parse(r.options) as string[],
    decision: r.decision, answer: r.answer, remember: r.remember === 1, answeredBy: r.answered_by,
    createdAt: r.created_at, expiresAt: r.expires_at, answeredAt: r.answered_at,
  };
}

export type NewRequest = Pick<TaskRequest, 'id' | 'taskId' | 'attempt' | 'kind' | 'worker' | 'sessionId' | 'question' | 'tool' | 'command' | 'scope' | 'reason' | 'options' | 'createdAt' | 'expiresAt'> &
  Partial<Pick<TaskRequest, 'status' | 'decision' | 'answer' | 'answeredBy' | 'answeredAt'>>;

export function insertRequest(db: Db, r: NewRequest): void {
  prep(db,
    `INSERT INTO requests (id, task_id, attempt, kind, status, worker, session_id, question, tool, command, scope, reason, options, decision, answer, answered_by, created_at, expires_at, answered_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    r.id, r.taskId, r.attempt, r.kind, r.status ?? 'pending', r.worker, r.sessionId, r.question, r.tool, r.command, r.scope, r.reason, JSON.stringify(r.options),
    r.decision ?? null, r.answer ?? null, r.answeredBy ?? null, r.createdAt, r.expiresAt, r.answeredAt ?? null,
  );
}

export function getRequest(db: Db, id: string): TaskRequest | null {
  const row = prep(db, 'SELECT * FROM requests WHERE id = ?').get(id) as RequestRow | undefined;
  return row ? toRequest(row) : null;
}

/** The task's pending request (a turn stops at its first question), or null. */
export function pendingRequestOf(db: Db, taskId: string): TaskRequest | null {
  const row = prep(db, `SELECT * FROM requests WHERE task_id = ? AND status = 'pending' ORDER BY created_at DESC, id DESC LIMIT 1`).get(taskId) as RequestRow | undefined;
  return row ? toRequest(row) : null;
}

/**
 * Trees one of whose tasks waits for a person to raise a tree total (a pending budget request on a
 * `root_*` field): no other task of such a tree starts meanwhile. Oldest request per tree.
 */
export function rootBudgetWaits(db: Db): { rootId: string; taskId: string; question: string }[] {
  return prep(db, `SELECT t.root_id AS rootId, r.task_id AS taskId, r.question AS question FROM requests r JOIN tasks t ON t.id = r.task_id
    WHERE r.status = 'pending' AND r.kind = 'budget' AND r.scope LIKE 'root!_%' ESCAPE '!' ORDER BY r.created_at, r.id`).all() as { rootId: string; taskId: string; question: string }[];
}

export interface ListRequestsQuery {
  status?: RequestStatus[];
  taskId?: string;
  limit?: number;
}

/** Requests, newest first. */
export function listRequests(db: Db, q: ListRequestsQuery = {}): TaskRequest[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (q.status?.length) {
    where.push(`status IN (${q.status.map(() => '?').join(',')})`);
    args.push(...q.status);
  }
  if (q.taskId) {
    where.push('task_id = ?');
    args.push(q.taskId);
  }
  const rows = prep(db, `SELECT * FROM requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`).all(...args, q.limit ?? 100) as RequestRow[];
  return rows.map(toRequest);
}

/** Permissions a person granted for this task that apply to `attempt`: remembered ones, and those answered for the attempt before it. */
export function grantsFor(db: Db, taskId: string, attempt: number): TaskRequest[] {
  const rows = prep(db,
    `SELECT * FROM requests WHERE task_id = ? AND kind = 'permission' AND status = 'answered' AND decision = 'allow' AND (remember = 1 OR attempt = ?)`,
  ).all(taskId, attempt - 1) as RequestRow[];
  return rows.map(toRequest);
}

/** Compare-and-set a pending request to its end. False when it was no longer pending. */
export function closeRequest(db: Db, id: string, to: Exclude<RequestStatus, 'pending'>, fields: { decision?: RequestDecision | null; answer?: string | null; remember?: boolean; answeredBy?: string | null; at: number }): boolean {
  return (
    prep(db, `UPDATE requests SET status = ?, decision = ?, answer = ?, remember = ?, answered_by = ?, answered_at = ? WHERE id = ? AND status = 'pending'`).run(
      to, fields.decision ?? null, fields.answer ?? null, fields.remember ? 1 : 0, fields.answeredBy ?? null, fields.at, id,
    ).changes === 1
  );
}

/** Pending requests past their expiry. */
export function expiredRequests(db: Db, now: number): TaskRequest[] {
  const rows = prep(db, `SELECT * FROM requests WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT 100`).all(now) as RequestRow[];
  return rows.map(toRequest);
}

/** Move a pending request's expiry (a paused task's clock stops). */
export function shiftExpiry(db: Db, id: string, byMs: number): void {
  prep(db, `UPDATE requests SET expires_at = expires_at + ? WHERE id = ? AND status = 'pending'`).run(byMs, id);
}

/** Pending budget requests of the tree's waiting tasks for the tree total `scope`, but `exceptTask`'s. */
export function pendingTreeBudgetRequests(db: Db, rootId: string, scope: string, exceptTask: string): { taskId: string; requestId: string }[] {
  return prep(db, `SELECT r.task_id AS taskId, r.id AS requestId FROM requests r JOIN tasks t ON t.id = r.task_id
    WHERE t.root_id = ? AND t.status = 'waiting_input' AND r.status = 'pending' AND r.kind = 'budget' AND r.scope = ? AND r.task_id <> ?`).all(rootId, scope, exceptTask) as { taskId: string; requestId: string }[];
}
