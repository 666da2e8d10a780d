import { AppError } from '../core/errors.js';

/**
 * Sliding one-minute window over mutating MCP calls of one server process
 * (config limits.mcp_mutations_per_minute, read on every call so a reloaded config applies).
 */
export class MutationLimiter {
  private stamps: number[] = [];

  constructor(
    private readonly perMinute: () => number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Count one mutating call, or throw `rate_limited` naming when the next one is allowed. */
  take(tool: string): void {
    const t = this.now();
    while (this.stamps.length && this.stamps[0] <= t - 60_000) this.stamps.shift();
    const limit = this.perMinute();
    if (this.stamps.length >= limit) {
      const retryS = Math.max(1, Math.ceil((this.stamps[0] + 60_000 - t) / 1000));
      throw new AppError('rate_limited', `${tool}: more than ${limit} mutating MCP calls in a minute (limits.mcp_mutations_per_minute); retry in ${retryS} s`, { retryAfterS: retryS });
    }
    this.stamps.push(t);
  }
}
