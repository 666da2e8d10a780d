import { describe, expect, it } from 'vitest';
import { retryAtOf } from '../../main/workers/rate-limit.js';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const inS = (text: string) => {
  const at = retryAtOf(text, NOW);
  return at === null ? null : (at - NOW) / 1000;
};

describe('the reset time a rate-limited CLI names', () => {
  it('reads each CLI’s words for it', () => {
    // Codex (ChatGPT plans) and the OpenAI API behind it.
    expect(inS("You've hit your usage limit. Upgrade to Pro or try again in 4 days 5 hours 3 minutes.")).toBe(4 * 86400 + 5 * 3600 + 180);
    expect(inS('Rate limit reached for gpt-5 in organization org-x on tokens per min. Please try again in 6m0s.')).toBe(360);
    expect(inS('exceeded retry limit, last status: 429 Too Many Requests. Please try again in 1.5s.')).toBe(1.5);
    // Claude Code's usage limit, as an epoch in seconds.
    expect(retryAtOf(`Claude AI usage limit reached|${NOW / 1000 + 3600}`, NOW)).toBe(NOW + 3_600_000);
    // Gemini CLI / Google APIs.
    expect(inS('Quota exceeded for quota metric. Please retry in 37.5s.')).toBe(37.5);
    expect(inS('{"error":{"code":429,"details":[{"retryDelay": "37s"}]}}')).toBe(37);
    // An HTTP header printed by a client.
    expect(inS('HTTP 429; Retry-After: 30')).toBe(30);
    expect(inS('limit resets at 2026-12-01T13:00:00Z')).toBe(3600);
  });

  it('names nothing when the output says no time, and never pauses for ever', () => {
    expect(inS('429 Too Many Requests')).toBeNull();
    expect(inS('rate_limit_error: overloaded')).toBeNull();
    expect(inS('please try again in 900 days')).toBe(7 * 86400);
    expect(inS('Retry-After: 0')).toBe(1);
  });
});
