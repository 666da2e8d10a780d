import { describe, expect, it } from 'vitest';
import { STATUS_LIST } from '../../renderer/src/api/types.js';
import { BOARD_COLUMNS } from '../../renderer/src/components/board-columns.js';

describe("the console's board", () => {
  it('puts every task status in exactly one column', () => {
    const placed = BOARD_COLUMNS.flatMap((c) => c.statuses);
    expect([...placed].sort()).toEqual([...STATUS_LIST].sort());
  });
});
