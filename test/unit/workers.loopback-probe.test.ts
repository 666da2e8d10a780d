import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { WorkerAdapter } from '../../main/workers/adapter.js';
import { runTurn } from '../../main/runner/turn.js';
import { minimalEnv } from '../../main/workers/env.js';
import { networkUse, straceAvailable, traced } from '../helpers/loopback-probe.js';
import { fakeTask } from '../helpers/worker-cli.js';
import { tempDir } from '../helpers/env.js';

const why = straceAvailable();
if (why) console.warn(`skipping loopback probe control: ${why}`);

/** A "worker" that phones home: a TCP connect to a non-loopback address and a DNS lookup. */
const phoneHome: WorkerAdapter = {
  name: 'phone-home',
  maxConcurrency: 1,
  detect: async () => ({ name: 'phone-home', installed: true, version: '1', authenticated: null, capabilities: { sessions: false, structuredOutput: false, sandboxModes: [] }, reason: null, command: null }),
  buildSpawn: async (turn) => ({
    command: process.execPath,
    args: ['-e', "const s=require('net').connect(443,'192.0.2.1');s.on('error',()=>{});require('dns').lookup('example.com',()=>{});setTimeout(()=>process.exit(0),700)"],
    env: turn.baseEnv,
    cwd: turn.workdir,
  }),
  createParser: () => ({ line: () => [], finish: () => ({ ok: true, finalText: null, sessionId: null }) }),
};

describe.skipIf(why !== null)('loopback probe (strace)', () => {
  const tmp = tempDir('lw-probe-');
  afterAll(() => tmp.cleanup());

  it('catches a worker that connects outside loopback', async () => {
    const log = join(tmp.dir, 'net.log');
    const turn = {
      task: fakeTask('explore', 'phone-home'), prompt: '', workdir: tmp.dir, sandbox: 'read-only' as const, resultSchema: null,
      resumeSessionId: null, runDir: tmp.dir, model: null, reasoningEffort: null, gateway: null, baseEnv: minimalEnv(),
    };
    await runTurn(traced(phoneHome, log), turn, { signal: AbortSignal.timeout(20_000), killGraceMs: 500 });
    const use = networkUse(log);
    expect(use.escapes).toContain('192.0.2.1:443');
  });
});
