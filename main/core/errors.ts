import { redactText } from './redact.js';

/**
 * The one error type that crosses faces. Each face (CLI, HTTP, IPC, MCP) translates it once.
 * Anything that is not an AppError is a bug and stays a plain Error.
 */
export const ERROR_CODES = [
  'not_found',
  'invalid_input',
  'conflict',
  'illegal_transition',
  'worker_missing',
  'git_failed',
  'cancelled',
  'timed_out',
  'forbidden',
  'rate_limited',
  'schema_too_new',
  'unavailable',
  'verification_failed',
  'boundary_violation',
  'worker_failed',
  'disk_full',
  'store_damaged',
  'busy',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * Why a task ended without success, as its `error.code` records it (tasks.error_code, attempts.error_code):
 * every AppError code (a failure raised while running it), plus the ends only a task has. Closed, so a
 * face or a test that switches on a code sees every one, and a new code is added here first.
 */
export const TASK_ERROR_CODES = [
  ...ERROR_CODES,
  /** The worker's CLI has no credentials LightWorker can see. */
  'auth_missing',
  /** A planner answered with something that is not a valid plan. */
  'invalid_plan',
  /** Integrating the change onto the user's branch conflicted; nothing was integrated. */
  'merge_conflict',
  /** The worker kept asking for what the policy denies. */
  'request_denied',
  /** A question or permission request went unanswered past its deadline. */
  'request_expired',
  /** Stopped by a shutdown of the process that ran it (resumable, unlike a person's cancel). */
  'shutdown',
  /** Its runner died or lost the lease. */
  'orphaned',
  /** A person rejected the completed change. */
  'rejected',
  /** A dependency ended without success. */
  'blocked',
  /** A budget (tokens, cost, turns, wall time) was reached and config [budgets] on_exceeded = "fail", or a person chose to stop. */
  'budget_exceeded',
  /** A bug: an error that was not an AppError. */
  'internal',
] as const;

export type TaskErrorCode = (typeof TASK_ERROR_CODES)[number];

export class AppError extends Error {
  readonly code: ErrorCode;
  /** Extra, already-redacted detail for machine consumers (e.g. the offending field). */
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }

  /** The offending input field (`details.field`) when the error is about one, e.g. `objective`. */
  get field(): string | undefined {
    const field = this.details?.field;
    return typeof field === 'string' ? field : undefined;
  }

  toJSON(): { code: ErrorCode; message: string; details?: Record<string, unknown> } {
    return { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) };
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/**
 * Shape every face uses for an error reply. Non-AppErrors become `internal` with their message. The
 * message is redacted: it may quote a worker's or a command's output.
 */
export function toErrorPayload(err: unknown): { code: string; message: string; details?: Record<string, unknown> } {
  if (isAppError(err)) return { ...err.toJSON(), message: redactText(err.message) };
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'internal', message: redactText(message) };
}
