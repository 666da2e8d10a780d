import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { COMMAND_NAMES } from '../../main/commands/names.js';

describe('main/commands/names.ts', () => {
  it('lists exactly the commands in the table (preload exposes one method per name)', () => {
    const missing = [...COMMANDS.keys()].filter((n) => !(COMMAND_NAMES as readonly string[]).includes(n));
    const extra = COMMAND_NAMES.filter((n) => !COMMANDS.has(n));
    expect(
      { missing, extra },
      'out of sync: run `node bin/run-ts.js scripts/command-names.ts --write`',
    ).toEqual({ missing: [], extra: [] });
  });
});
