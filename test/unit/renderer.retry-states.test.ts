import { describe, expect, it } from 'vitest';
import { RETRYABLE } from '../../main/tasks/ops.js';
import { RETRYABLE_STATUSES } from '../../renderer/src/api/types.js';

describe('the console offers Retry where the engine retries', () => {
  it('renderer RETRYABLE_STATUSES equals the engine rule (main/tasks/ops.ts)', () => {
    expect([...RETRYABLE_STATUSES].sort()).toEqual([...RETRYABLE].sort());
  });
});
