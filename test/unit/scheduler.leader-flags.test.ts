import { describe, expect, it } from 'vitest';
import { LEADER_V8_FLAGS, leaderExecArgv } from '../../main/scheduler/background.js';

// A leader LightWorker starts itself (an MCP session's background runner) caps V8's young generation
// (~10 MiB less peak RSS in a 200-task drain, npm run bench); flags the parent already gives are kept, not doubled.
describe('leader V8 flags', () => {
  it('adds the semi-space cap to the inherited flags unless one is set', () => {
    expect(leaderExecArgv([])).toEqual([...LEADER_V8_FLAGS]);
    expect(leaderExecArgv(['--enable-source-maps'])).toEqual(['--enable-source-maps', ...LEADER_V8_FLAGS]);
    expect(leaderExecArgv(['--max-semi-space-size=8'])).toEqual(['--max-semi-space-size=8', ...LEADER_V8_FLAGS.filter((f) => !f.startsWith('--max-semi-space-size'))]);
  });
});
