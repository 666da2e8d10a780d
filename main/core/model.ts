import type { EFFORTS, KINDS, MODES } from './config.js';
import type { TaskErrorCode } from './errors.js';

export type TaskKind = (typeof KINDS)[number];
export type TaskMode = (typeof MODES)[number];
export type ReasoningEffort = (typeof EFFORTS)[number];
export type TaskType = 'chore' | 'feature' | 'hotfix' | 'refactor';

/**
 * Who asks for a change that can start a write. `person`: a person's face (CLI, console, desktop, a
 * program of theirs), or an agent the person allowed with approvals.allow_mcp. `agent`: an MCP client or
 * a process started by a worker (LIGHTWORKER_DEPTH ≥ 1) — its writes wait for a person's approval.
 * `engine`: LightWorker continuing work whose mode and approval were settled when it was created (plan
 * children, team rounds, answers to a worker's question, a rate-limit retry).
 */
export type Authority = 'person' | 'agent' | 'engine';

export const STATUSES = [
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
  // Human in the loop: a turn ended asking a person; a person paused it; a person rejected the change.
  'waiting_input',
  'paused',
  'rejected',
] as const;
export type TaskStatus = (typeof STATUSES)[number];

/** States after which nothing runs again without an explicit retry (or accept, for completed). */
export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'accepted', 'failed', 'timed_out', 'cancelled', 'blocked', 'orphaned', 'rejected']);
/** Ends that block every dependent (fail closed). */
export const FAILED_ENDS: ReadonlySet<TaskStatus> = new Set(['failed', 'timed_out', 'cancelled', 'blocked', 'orphaned', 'rejected']);
/** States in which a task waits for a person before anything runs (wait calls return on them). */
export const NEEDS_PERSON: ReadonlySet<TaskStatus> = new Set(['awaiting_approval', 'waiting_input']);
/** States in which a runner owns the task. */
export const ACTIVE: ReadonlySet<TaskStatus> = new Set(['starting', 'running', 'verifying']);

/** A verify command: an argv array, or a shell string the user wrote. */
export type VerifyCommand = string[] | string;

export interface TaskUsage {
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

export interface Task {
  id: string;
  rootId: string;
  parentId: string | null;
  name: string;
  kind: TaskKind;
  objective: string;
  workspace: string;
  baseRef: string | null;
  worker: string;
  model: string | null;
  reasoningEffort: ReasoningEffort | null;
  profile: string | null;
  gateway: string | null;
  mode: TaskMode;
  type: TaskType | null;
  priority: number;
  timeoutS: number;
  allowedPaths: string[];
  successCriteria: string[];
  verify: VerifyCommand[];
  contextPack: string | null;
  /** Free-form, worker-specific settings (the mock worker's script lives here). */
  metadata: Record<string, unknown>;
  depth: number;
  dependsOn: string[];
  status: TaskStatus;
  attempt: number;
  approvedAt: number | null;
  cancelRequested: boolean;
  blockedBy: string | null;
  runnerId: string | null;
  pid: number | null;
  pidStart: string | null;
  worktreePath: string | null;
  branch: string | null;
  sessionId: string | null;
  usage: TaskUsage;
  result: unknown;
  schemaValid: boolean | null;
  error: { code: TaskErrorCode; message: string } | null;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  endedAt: number | null;
}
