import { describe, expect, it } from 'vitest';
import { ERROR_CODES, TASK_ERROR_CODES, type TaskErrorCode } from '../../main/core/errors.js';
import type { TaskFieldUpdate } from '../../main/store/tasks.js';
import type { Task } from '../../main/tasks/types.js';

describe('task error codes', () => {
  it('are a closed set: every AppError code plus the ends only a task has, each once', () => {
    expect(new Set(TASK_ERROR_CODES).size).toBe(TASK_ERROR_CODES.length);
    for (const c of ERROR_CODES) expect(TASK_ERROR_CODES).toContain(c);
    expect(TASK_ERROR_CODES).toEqual(expect.arrayContaining(['shutdown', 'orphaned', 'rejected', 'blocked', 'request_expired', 'merge_conflict', 'internal']));
  });

  it('a code outside the set does not type-check (npm run typecheck fails on a new unknown one)', () => {
    const known: TaskErrorCode = 'merge_conflict';
    // @ts-expect-error: not a task error code
    const unknown: TaskErrorCode = 'merge_conflicted';
    // @ts-expect-error: a task's recorded error names a known code
    const error: Task['error'] = { code: 'oops', message: 'x' };
    // @ts-expect-error: nor can the runner write one
    const fields: TaskFieldUpdate = { errorCode: 'timeout' };
    expect([known, unknown, error, fields]).toHaveLength(4);
  });
});
