import { describe, expect, it } from 'vitest';
import { RETRYABLE } from '../../main/tasks/ops.js';
import { FOLLOWABLE } from '../../main/tasks/followup.js';
import { PAUSABLE, REDIRECTABLE, REJECTABLE, RESUMABLE, REVERIFIABLE } from '../../main/tasks/controls.js';
import { CONTROL_STATUSES, RETRYABLE_STATUSES } from '../../renderer/src/api/types.js';

const sorted = (l: readonly string[]) => [...l].sort();

describe('the console offers Retry where the engine retries', () => {
  it('renderer RETRYABLE_STATUSES equals the engine rule (main/tasks/ops.ts)', () => {
    expect(sorted(RETRYABLE_STATUSES)).toEqual(sorted(RETRYABLE));
  });
});

describe('the console offers each task control where the engine takes it', () => {
  it('renderer CONTROL_STATUSES equal the engine rules (followup.ts, controls.ts)', () => {
    expect(sorted(CONTROL_STATUSES.followup)).toEqual(sorted(FOLLOWABLE));
    expect(sorted(CONTROL_STATUSES.redirect)).toEqual(sorted(REDIRECTABLE));
    expect(sorted(CONTROL_STATUSES.reverify)).toEqual(sorted(REVERIFIABLE));
    expect(sorted(CONTROL_STATUSES.pause)).toEqual(sorted(PAUSABLE));
    expect(sorted(CONTROL_STATUSES.resume)).toEqual(sorted(RESUMABLE));
    expect(sorted(CONTROL_STATUSES.reject)).toEqual(sorted(REJECTABLE));
  });
});
