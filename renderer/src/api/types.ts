// Types shared with the engine (type-only imports; nothing from main/ is bundled into the renderer).
export type { Task, TaskStatus, TaskKind, TaskMode } from '../../../main/tasks/types.js';
export type { EventRow } from '../../../main/store/events.js';
export type { TreeNode } from '../../../main/commands/tasks.js';
export type { DoctorCheck } from '../../../main/commands/doctor.js';
export type { Config } from '../../../main/core/config.js';
export type { CostSummary } from '../../../main/tasks/cost.js';
export type { WorkspaceUse } from '../../../main/store/tasks.js';
export type { RouteRecord } from '../../../main/workers/route-record.js';

import type { Task } from '../../../main/tasks/types.js';
/** A task as the commands return it. */
export type TaskView = Task & { waitingOn?: string[] };

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
] as const;
