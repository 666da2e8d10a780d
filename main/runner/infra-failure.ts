import type { TaskErrorCode } from '../core/errors.js';
import type { TurnResult } from './turn.js';

/** Ends that say the worker cannot run at all (no credentials, no CLI); a failed turn is judged by isInfraFailure. */
export const INFRA_CODES: ReadonlySet<TaskErrorCode> = new Set(['auth_missing', 'worker_missing']);

/** A provider or transport fault, in the words CLIs print for one (HTTP 5xx, overload, a dropped connection). */
const INFRA_PATTERN = /\b50[0-4]\b|\b52[0-9]\b|internal server error|service unavailable|bad gateway|gateway time-?out|\boverloaded\b|stream (?:error|disconnected)|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|socket hang up|connection (?:refused|reset|closed)|network error|cannot start /i;

/** What the gateway a turn went through said when it was at fault: a 5xx, overload, a dropped connection, or its auth refused. */
const GATEWAY_PATTERN = /\b50[0-4]\b|\b52[0-9]\b|internal server error|service unavailable|bad gateway|gateway time-?out|\boverloaded\b|ECONNREFUSED|ECONNRESET|connection (?:refused|reset)|\b401\b|\b403\b|unauthori[sz]ed|invalid (?:api|x-api) key|incorrect api key|authentication (?:failed|error)/i;

/** Whose infrastructure failed: the worker's only, or also the gateway's it was routed through (false: neither). */
export type InfraBlame = false | 'worker' | 'gateway';

/**
 * Whether a failed turn says the worker itself is broken rather than the task's work: it could not start,
 * crashed on a signal, printed nothing its parser understood (unparsable output), or failed with a provider
 * or transport fault. A worker that ran and reported its own failure (a refusal, a wrong answer) is not one.
 * With `viaGateway`, a provider fault or refused auth is the gateway's as well ('gateway').
 */
export function isInfraFailure(result: TurnResult, parsedEvents: number, viaGateway = false): InfraBlame {
  const text = `${result.error?.message ?? ''}\n${result.stderrTail}`;
  if (viaGateway && result.pid > 0 && GATEWAY_PATTERN.test(text)) return 'gateway';
  if (result.pid <= 0 || result.exitCode === null) return 'worker';
  if (parsedEvents === 0) return 'worker';
  return INFRA_PATTERN.test(text) ? 'worker' : false;
}
