import { AppError, type TaskErrorCode } from '../core/errors.js';
import { redactText, redactValue } from '../core/redact.js';
import type { Task, TaskStatus } from '../core/model.js';
import { prep, type Db } from './db.js';

/** Raw row as stored; only this module sees snake_case. */
interface TaskRow {
  id: string;
  root_id: string;
  parent_id: string | null;
  name: string;
  kind: Task['kind'];
  objective: string;
  workspace: string;
  base_ref: string | null;
  worker: string;
  model: string | null;
  reasoning_effort: Task['reasoningEffort'];
  profile: string | null;
  gateway: string | null;
  mode: Task['mode'];
  type: Task['type'];
  priority: number;
  timeout_s: number;
  allowed_paths: string;
  success_criteria: string;
  verify: string;
  context_pack: string | null;
  metadata: string;
  depth: number;
  status: TaskStatus;
  attempt: number;
  approved_at: number | null;
  cancel_requested: number;
  blocked_by: string | null;
  runner_id: string | null;
  pid: number | null;
  pid_start: string | null;
  worktree_path: string | null;
  branch: string | null;
  session_id: string | null;
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  result: string | null;
  schema_valid: number | null;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  ended_at: number | null;
}

function toTask(r: TaskRow, dependsOn: string[]): Task {
  return {
    id: r.id,
    rootId: r.root_id,
    parentId: r.parent_id,
    name: r.name,
    kind: r.kind,
    objective: r.objective,
    workspace: r.workspace,
    baseRef: r.base_ref,
    worker: r.worker,
    model: r.model,
    reasoningEffort: r.reasoning_effort,
    profile: r.profile,
    gateway: r.gateway,
    mode: r.mode,
    type: r.type,
    priority: r.priority,
    timeoutS: r.timeout_s,
    allowedPaths: JSON.parse(r.allowed_paths),
    successCriteria: JSON.parse(r.success_criteria),
    verify: JSON.parse(r.verify),
    contextPack: r.context_pack,
    metadata: JSON.parse(r.metadata),
    depth: r.depth,
    dependsOn,
    status: r.status,
    attempt: r.attempt,
    approvedAt: r.approved_at,
    cancelRequested: r.cancel_requested === 1,
    blockedBy: r.blocked_by,
    runnerId: r.runner_id,
    pid: r.pid,
    pidStart: r.pid_start,
    worktreePath: r.worktree_path,
    branch: r.branch,
    sessionId: r.session_id,
    usage: { inputTokens: r.input_tokens, cachedTokens: r.cached_tokens, outputTokens: r.output_tokens, costUsd: r.cost_usd },
    result: r.result === null ? null : JSON.parse(r.result),
    schemaValid: r.schema_valid === null ? null : r.schema_valid === 1,
    // Written only from TaskErrorCode values (updateTaskFields, transition); read back as written.
    error: r.error_code ? { code: r.error_code as TaskErrorCode, message: r.error_message ?? '' } : null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    startedAt: r.started_at,
    endedAt: r.ended_at,
  };
}

/** Columns the engine may set through `updateTaskFields`, camelCase → column. */
const FIELD_COLUMNS = {
  runnerId: 'runner_id',
  pid: 'pid',
  pidStart: 'pid_start',
  worktreePath: 'worktree_path',
  branch: 'branch',
  sessionId: 'session_id',
  result: 'result',
  schemaValid: 'schema_valid',
  errorCode: 'error_code',
  errorMessage: 'error_message',
  startedAt: 'started_at',
  endedAt: 'ended_at',
  blockedBy: 'blocked_by',
  approvedAt: 'approved_at',
  cancelRequested: 'cancel_requested',
  attempt: 'attempt',
  inputTokens: 'input_tokens',
  cachedTokens: 'cached_tokens',
  outputTokens: 'output_tokens',
  costUsd: 'cost_usd',
  metadata: 'metadata',
  worker: 'worker',
  model: 'model',
} as const;
export type TaskFieldUpdate = Partial<Record<keyof typeof FIELD_COLUMNS, unknown>> & { errorCode?: TaskErrorCode | null };

/**
 * Column values for an UPDATE of `fields`. Text that may carry a worker's or caller's words (result,
 * error message, metadata) is redacted here, the one place every task update passes through.
 */
export function toColumnValues(fields: TaskFieldUpdate): { sets: string[]; values: unknown[] } {
  const sets: string[] = [];
  const values: unknown[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const col = FIELD_COLUMNS[key as keyof typeof FIELD_COLUMNS];
    if (!col) throw new Error(`unknown task field ${key}`);
    sets.push(`${col} = ?`);
    if (key === 'result' || key === 'metadata') values.push(value === null || value === undefined ? null : JSON.stringify(redactValue(value)));
    else if (key === 'errorMessage' && typeof value === 'string') values.push(redactText(value));
    else if (typeof value === 'boolean') values.push(value ? 1 : 0);
    else values.push(value ?? null);
  }
  return { sets, values };
}

export function getTask(db: Db, id: string): Task | null {
  const row = prep(db, 'SELECT * FROM tasks WHERE id = ?').get(id) as TaskRow | undefined;
  if (!row) return null;
  return toTask(row, dependenciesOf(db, id));
}

/** A task's status and attempt alone (hot paths that need no more than that), or null. */
export function getTaskState(db: Db, id: string): { status: Task['status']; attempt: number } | null {
  return (prep(db, 'SELECT status, attempt FROM tasks WHERE id = ?').get(id) as { status: Task['status']; attempt: number } | undefined) ?? null;
}

/** A task's name alone (a status line naming what ended), or null. */
export function taskName(db: Db, id: string): string | null {
  return (prep(db, 'SELECT name FROM tasks WHERE id = ?').get(id) as { name: string } | undefined)?.name ?? null;
}

/** The depth of a team member (metadata.team set), or null for any other task: one indexed row, no full read. */
export function teamMemberDepth(db: Db, id: string): number | null {
  const r = prep(db, "SELECT depth FROM tasks WHERE id = ? AND json_extract(metadata, '$.team') IS NOT NULL").get(id) as { depth: number } | undefined;
  return r?.depth ?? null;
}

export function requireTask(db: Db, id: string): Task {
  const t = getTask(db, id);
  if (!t) throw new AppError('not_found', `task ${id} not found`, { field: 'id', id });
  return t;
}

/** Shortest id prefix a caller may use: the UI shows 8 characters; 6 keeps collisions rare. */
export const MIN_ID_PREFIX = 6;
const ID_PREFIX = new RegExp(`^[0-9A-HJKMNP-TV-Z]{${MIN_ID_PREFIX},26}$`);

/**
 * The full id of the one task whose id starts with `idOrPrefix` (case-insensitive, ≥ 6 characters).
 * Anything that does not look like an id or prefix comes back unchanged, for the input schema to reject.
 * No match → `not_found`; several → `invalid_input` naming them.
 */
export function resolveTaskId(db: Db, idOrPrefix: string, field = 'id'): string {
  const p = idOrPrefix.toUpperCase();
  if (!ID_PREFIX.test(p)) return idOrPrefix;
  if (p.length === 26) return p;
  // A range on the primary key: every id character sorts at or below 'Z'.
  const rows = prep(db, 'SELECT id FROM tasks WHERE id >= ? AND id <= ? ORDER BY id LIMIT 6').all(p, p.padEnd(26, 'Z')) as { id: string }[];
  if (rows.length === 1) return rows[0].id;
  if (!rows.length) throw new AppError('not_found', `${field}: no task id starts with ${idOrPrefix}`, { field, id: idOrPrefix });
  const names = rows.slice(0, 5).map((r) => r.id).join(', ');
  throw new AppError('invalid_input', `${field}: ${idOrPrefix} is ambiguous: it matches ${names}${rows.length > 5 ? ', …' : ''}; give more characters`, {
    field,
    candidates: rows.slice(0, 5).map((r) => r.id),
  });
}

export function dependenciesOf(db: Db, id: string): string[] {
  return (prep(db, 'SELECT depends_on FROM task_deps WHERE task_id = ? ORDER BY depends_on').all(id) as { depends_on: string }[]).map((r) => r.depends_on);
}

export function dependentsOf(db: Db, id: string): string[] {
  return (prep(db, 'SELECT task_id FROM task_deps WHERE depends_on = ? ORDER BY task_id').all(id) as { task_id: string }[]).map((r) => r.task_id);
}

export interface ListTasksQuery {
  status?: TaskStatus[];
  rootId?: string;
  search?: string;
  limit?: number;
  /** Return tasks with id < before (newest first paging). */
  before?: string;
}

/** A repository tasks ran in: how many and when last, for pickers and filters. */
export interface WorkspaceUse {
  workspace: string;
  tasks: number;
  lastUsedAt: number;
}

/** Workspaces of all tasks, most recently used first (a tie within a millisecond: the newest id, ULIDs being monotonic). */
export function listWorkspaces(db: Db, limit = 50): WorkspaceUse[] {
  const rows = prep(db, 'SELECT workspace, COUNT(*) AS n, MAX(created_at) AS last, MAX(id) AS newest FROM tasks GROUP BY workspace ORDER BY last DESC, newest DESC LIMIT ?').all(limit) as { workspace: string; n: number; last: number }[];
  return rows.map((r) => ({ workspace: r.workspace, tasks: r.n, lastUsedAt: r.last }));
}

/** Newest first. Dependencies are filled in one extra query for the page. */
export function listTasks(db: Db, q: ListTasksQuery = {}): Task[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (q.status?.length) {
    where.push(`status IN (${q.status.map(() => '?').join(',')})`);
    args.push(...q.status);
  }
  if (q.rootId) {
    where.push('root_id = ?');
    args.push(q.rootId);
  }
  if (q.search) {
    where.push("(name LIKE ? ESCAPE '\\' OR objective LIKE ? ESCAPE '\\' OR id = ?)");
    const like = `%${q.search.replace(/[\\%_]/g, (c) => '\\' + c)}%`;
    args.push(like, like, q.search);
  }
  if (q.before) {
    where.push('id < ?');
    args.push(q.before);
  }
  // 10,000 a page, plus the one row past it that tells a caller whether more exist.
  const limit = Math.min(Math.max(q.limit ?? 100, 1), 10_001);
  const sql = `SELECT * FROM tasks ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
  const rows = prep(db, sql).all(...args, limit) as TaskRow[];
  if (rows.length === 0) return [];
  const deps = new Map<string, string[]>();
  const depRows = prep(db, `SELECT task_id, depends_on FROM task_deps WHERE task_id IN (SELECT value FROM json_each(?)) ORDER BY depends_on`)
    .all(JSON.stringify(rows.map((r) => r.id))) as { task_id: string; depends_on: string }[];
  for (const d of depRows) {
    const list = deps.get(d.task_id) ?? [];
    list.push(d.depends_on);
    deps.set(d.task_id, list);
  }
  return rows.map((r) => toTask(r, deps.get(r.id) ?? []));
}

/** Counts of tasks in these statuses only (through the status index: ended tasks, most of a store, are not read). */
export function countInStatuses(db: Db, statuses: readonly string[]): Record<string, number> {
  if (!statuses.length) return {};
  const rows = prep(db, `SELECT status, COUNT(*) AS n FROM tasks WHERE status IN (${statuses.map(() => '?').join(',')}) GROUP BY status`).all(...statuses) as { status: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

export function countByStatus(db: Db): Record<string, number> {
  const rows = prep(db, 'SELECT status, COUNT(*) AS n FROM tasks GROUP BY status').all() as { status: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Set non-status fields of a task (no state change). */
export function updateTaskFields(db: Db, id: string, fields: TaskFieldUpdate): void {
  const { sets, values } = toColumnValues(fields);
  if (!sets.length) return;
  prep(db, `UPDATE tasks SET ${sets.join(', ')}, updated_at = ? WHERE id = ?`).run(...values, Date.now(), id);
}

export interface NewTaskRow {
  id: string;
  rootId: string;
  parentId: string | null;
  name: string;
  kind: Task['kind'];
  objective: string;
  workspace: string;
  baseRef: string | null;
  worker: string;
  model: string | null;
  reasoningEffort: Task['reasoningEffort'];
  profile: string | null;
  gateway: string | null;
  mode: Task['mode'];
  type: Task['type'];
  priority: number;
  timeoutS: number;
  allowedPaths: string[];
  successCriteria: string[];
  verify: Task['verify'];
  contextPack: string | null;
  metadata: Record<string, unknown>;
  depth: number;
  status: TaskStatus;
  approvedAt: number | null;
  dependsOn: string[];
}

/** A copy of a new task with every caller-text field redacted (name, objective, criteria, verify, metadata). */
export function redactNewRow(t: NewTaskRow): NewTaskRow {
  return {
    ...t,
    name: redactText(t.name),
    objective: redactText(t.objective),
    successCriteria: redactValue(t.successCriteria),
    verify: redactValue(t.verify),
    metadata: redactValue(t.metadata),
  };
}

/** Insert a new task and its dependency rows. Its text is redacted here (see `redactNewRow`). */
export function insertTask(db: Db, row: NewTaskRow, now: number): void {
  const t = redactNewRow(row);
  prep(db, 
    `INSERT INTO tasks (id, root_id, parent_id, name, kind, objective, workspace, base_ref, worker, model, reasoning_effort,
       profile, gateway, mode, type, priority, timeout_s, allowed_paths, success_criteria, verify, context_pack, metadata,
       depth, status, approved_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    t.id, t.rootId, t.parentId, t.name, t.kind, t.objective, t.workspace, t.baseRef, t.worker, t.model, t.reasoningEffort,
    t.profile, t.gateway, t.mode, t.type, t.priority, t.timeoutS, JSON.stringify(t.allowedPaths),
    JSON.stringify(t.successCriteria), JSON.stringify(t.verify), t.contextPack, JSON.stringify(t.metadata), t.depth,
    t.status, t.approvedAt, now, now,
  );
  const dep = prep(db, 'INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)');
  for (const d of t.dependsOn) dep.run(t.id, d);
}

/** Is any task in one of `statuses` right now? */
export function anyTaskIn(db: Db, statuses: Iterable<TaskStatus>): boolean {
  const list = [...statuses];
  return db.prepare(`SELECT 1 FROM tasks WHERE status IN (${list.map(() => '?').join(', ')}) LIMIT 1`).get(...list) !== undefined;
}

/** The ids of every task of the tree `rootId` (the root's own included). */
export function taskIdsOfTree(db: Db, rootId: string): string[] {
  return (prep(db, 'SELECT id FROM tasks WHERE root_id = ?').all(rootId) as { id: string }[]).map((r) => r.id);
}
