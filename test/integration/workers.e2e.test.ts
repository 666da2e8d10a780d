import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../main/core/config.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '../../bin/lightworker.js');
const KEY_ENV = 'LW_E2E_GATEWAY_KEY';

const cases = [
  { worker: 'codex', bin: 'codex', model: undefined },
  { worker: 'claude-code', bin: 'claude', model: 'claude-sonnet-4-5' },
] as const;

/**
 * End to end through the product: a task submitted through the command table, run by
 * `lightworker run --until-idle` (a separate process: scheduler, worktree, real CLI, gateway from
 * config.toml [gateways.fake] with its key only in the environment), ends completed with usage.
 */
describe('real worker tasks end to end (lightworker run --until-idle)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({
      script: {
        turns: [
          { text: 'Writing hello.txt.', tools: [{ write: { path: 'hello.txt', content: 'hello from the worker\n' } }] },
          { json: { summary: 'Wrote hello.txt.', files_changed: ['hello.txt'], notes: null } },
        ],
      },
    });
  });
  afterAll(() => gw?.close());

  for (const c of cases) {
    it(`${c.worker}: an execute task completes with a schema-valid result and cached-token usage`, { timeout: 180_000 }, async (ctx) => {
      const why = await cliUnavailable(c.bin);
      if (why) {
        console.warn(`skipping ${c.worker} end to end: ${why}`);
        ctx.skip();
      }
      const raw = { gateways: { fake: { base_url: `${gw.url}/v1`, key_env: KEY_ENV } }, scheduler: { default_worker: 'mock' } };
      const h: TestHome = makeHome({ config: parseConfig(raw) });
      try {
        h.configure(`[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n`);
        const { task } = await h.call('delegate_task', {
          objective: 'Create hello.txt saying hello.', kind: 'execute', workspace: h.repo, worker: c.worker, gateway: 'fake',
          mode: 'auto_execute', ...(c.model ? { model: c.model } : {}),
        });
        const env = { ...process.env, [KEY_ENV]: 'sk-e2e-key-abcdef123456' };
        const out = await run(process.execPath, [BIN, '--home', h.home, 'run', '--until-idle', '--timeout', '150'], { env, timeout: 170_000 });
        const { task: t } = await h.call('get_task', { id: task.id });
        const detail = `${out.stderr}\n${JSON.stringify(t.error)}`;
        expect(t.status, detail).toBe('completed');
        expect(t.schemaValid).toBe(true);
        expect(t.result).toEqual({ summary: 'Wrote hello.txt.', files_changed: ['hello.txt'], notes: null });
        expect(t.usage.inputTokens).toBeGreaterThan(0);
        expect(t.usage.cachedTokens).toBeGreaterThan(0);
        expect(t.usage.outputTokens).toBeGreaterThan(0);
        expect(t.sessionId).toBeTruthy();
        expect(t.worktreePath && existsSync(join(t.worktreePath, 'hello.txt')) && readFileSync(join(t.worktreePath, 'hello.txt'), 'utf8')).toBe('hello from the worker\n');
        const { events } = await h.call('get_events', { task_id: t.id, limit: 1000 });
        const types = new Set(events.map((e: { type: string }) => e.type));
        for (const ty of ['worker.started', 'worker.tool', 'worker.usage']) expect(types).toContain(ty);
        expect(JSON.stringify(events)).not.toContain('sk-e2e-key-abcdef123456');
      } finally {
        h.cleanup();
      }
    });
  }
});
