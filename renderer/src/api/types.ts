// Types shared with the engine (type-only imports; nothing from main/ is bundled into the renderer).
export type { Task, TaskStatus, TaskKind, TaskMode } from '../../../main/tasks/types.js';
export type { EventRow } from '../../../main/store/events.js';
export type { TreeNode } from '../../../main/commands/tasks.js';
export type { DoctorCheck } from '../../../main/commands/doctor.js';
export type { Config } from '../../../main/core/config.js';
export type { TaskRequest } from '../../../main/store/requests.js';
export type { CostSummary } from '../../../main/tasks/cost.js';
export type { WorkspaceUse } from '../../../main/store/tasks.js';
export type { RouteRecord } from '../../../main/workers/route-record.js';

import type { Task } from '../../../main/tasks/types.js';
import type { PresentedTask } from '../../../main/commands/tasks.js';
import type { TaskSummary } from '../../../main/tasks/summary.js';
/** A task as the commands return it in full (get_task, list_tasks with `detail`). */
export type TaskView = PresentedTask;
export type { TaskSummary };
export type { NeedsInput } from '../../../main/tasks/summary.js';

/** list_tasks answers full records with `detail: true`, summaries without: this tells one from the other. */
export function isFullTask(t: TaskView | TaskSummary): t is TaskView {
  return 'objective' in t;
}

import type { TaskRequest } from '../../../main/store/requests.js';
/** A request as list_requests returns it: with the facts of its task a person needs to answer. */
export type RequestView = TaskRequest & {
  task: Pick<Task, 'id' | 'name' | 'status' | 'kind' | 'worker' | 'objective' | 'worktreePath' | 'branch' | 'sessionId'>;
};

/**
 * The states the engine retries (main/tasks/ops.ts RETRYABLE, which a unit test holds this equal to): a
 * completed, accepted or blocked task is not retried (a blocked one runs once its dependency is retried).
 */
export const RETRYABLE_STATUSES: readonly string[] = ['failed', 'timed_out', 'cancelled', 'orphaned'];

export const STATUS_LIST = [
  'awaiting_approval',
  'queued',
  'starting',
  'running',
  'verifying',
  'completed',
  'accepted',
  'failed',
  'timed_out',
  'cancelled',
  'blocked',
  'orphaned',
  'waiting_input',
  'paused',
  'rejected',
] as const;

export type { ReviewComment as ReviewCommentView } from '../../../main/isolation/review-comments.js';

/** A task's pull request as get_task shows it (`pull`). */
export interface PullView {
  number: number;
  url: string;
  forge: string;
  branch: string;
  base: string;
  draft: boolean;
  state: 'open' | 'merged' | 'closed';
  checks: 'none' | 'pending' | 'passing' | 'failing';
  review: 'none' | 'commented' | 'changes_requested' | 'approved';
  headSha: string;
  fixRounds: number;
  fixing: boolean;
  lastError: string | null;
}

/**
 * The states in which the engine takes each control on a task (main/tasks/followup.ts FOLLOWABLE,
 * main/tasks/controls.ts; a unit test holds them equal): the task page offers a control only there.
 */
export const CONTROL_STATUSES = {
  /** followup_task and handoff_task (a handoff is a follow-up on another worker). */
  followup: ['completed', 'failed', 'timed_out', 'cancelled', 'rejected', 'waiting_input'],
  redirect: ['awaiting_approval', 'queued', 'starting', 'running', 'verifying', 'waiting_input', 'paused'],
  reverify: ['completed', 'failed', 'rejected'],
  pause: ['queued', 'waiting_input'],
  resume: ['paused'],
  reject: ['completed'],
} as const satisfies Record<string, readonly string[]>;

export type { TeamReport, TeamMemberReport } from '../../../main/orchestration/team-report.js';
