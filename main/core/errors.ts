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
