import { AppError } from '../core/errors.js';
import type { Engine } from '../engine.js';
import type { Task } from '../tasks/types.js';

/**
 * The runner's view of isolation (SPEC §6). The runner calls, in order:
 * prepareWorkspace → (worker turns) → inspectChanges → runVerification [→ repair turn → inspect → verify]…
 */
export interface PreparedWorkspace {
  /** Where the worker runs: the task's worktree (execute) or the workspace itself (read-only kinds). */
  workdir: string;
  /** Extra environment for the worker and verify commands (LIGHTWORKER_PORT, …). */
  env: Record<string, string>;
  /** Opaque state the later steps need (source status before the run, base commit…). */
  state: Record<string, unknown>;
}

export interface ChangeReport {
  ok: boolean;
  changedFiles: string[];
  empty: boolean;
  /** Paths outside the worktree or its allowed paths, escaping symlinks, writes into the source checkout. */
  violations: string[];
  diffArtifact: string | null;
}

export interface VerifyCommandResult {
  command: string[] | string;
  exitCode: number | null;
  durationMs: number;
  outputTail: string;
  timedOut: boolean;
}

export interface VerifyReport {
  ok: boolean;
  results: VerifyCommandResult[];
}

/** Read-only kinds run in the workspace itself; execute tasks get a worktree. */
export async function prepareWorkspace(_engine: Engine, task: Task): Promise<PreparedWorkspace> {
  if (task.kind !== 'execute') return { workdir: task.workspace, env: {}, state: {} };
  throw new AppError('unavailable', 'execute tasks need worktree isolation, which is not built yet');
}

export async function inspectChanges(_engine: Engine, task: Task, _ws: PreparedWorkspace): Promise<ChangeReport> {
  if (task.kind !== 'execute') return { ok: true, changedFiles: [], empty: true, violations: [], diffArtifact: null };
  throw new AppError('unavailable', 'change inspection is not built yet');
}

export async function runVerification(_engine: Engine, task: Task, _ws: PreparedWorkspace, _signal: AbortSignal): Promise<VerifyReport> {
  if (task.verify.length === 0) return { ok: true, results: [] };
  throw new AppError('unavailable', 'verification is not built yet');
}
