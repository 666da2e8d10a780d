import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { cmdlinesSeenByNobody, nobodyUnavailable, readableByNobody } from '../helpers/as-nobody.js';
import { runCli } from '../helpers/cli.js';
import { makeGatewayHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

/**
 * The real worker CLIs get the prompt on stdin, never in argv: while a turn runs (its model request held
 * by the gateway), another local user (uid nobody) finds the objective, and the secret in it, in no
 * process's /proc/<pid>/cmdline, and can read nothing in the home — the CLIs' own files included.
 */
const KEY_ENV = 'LW_ARGV_GATEWAY_KEY';
const T = 180_000;
const MARKER = `argv-marker-${process.pid}-${Date.now()}`;
const SECRET = `sk-proj-${'Kd4'.repeat(11)}Qv`;
const nobody = nobodyUnavailable();

function walk(dir: string): string[] {
  const out = [dir];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (lstatSync(path).isDirectory()) out.push(...walk(path));
    else out.push(path);
  }
  return out;
}

async function waitFor(cond: () => boolean, what: string, ms = 90_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.skipIf(nobody !== null)('the real CLIs never carry the objective in argv (as uid nobody)', () => {
  let gw: Gateway;
  let h: TestHome;
  beforeAll(async () => {
    gw = await startGateway({ keepBodies: true });
    // The model request that carries the objective is held until the task is cancelled.
    gw.addScript('hold', { turns: [{ hang: 'headers' }] });
    h = makeGatewayHome(gw.url, KEY_ENV);
    // Open above the home, as ~/.local/state is: only the home's own modes protect it.
    chmodSync(h.root, 0o755);
  });
  afterAll(async () => {
    h?.cleanup();
    await gw?.close();
  });

  it('mock: the objective is in no command line while it runs', { timeout: T }, async () => {
    const objective = `Survey the cache. ${MARKER}-mock. The staging key is ${SECRET}.`;
    const { task } = await h.call('delegate_task', { objective, workspace: h.repo, kind: 'explore', worker: 'mock', metadata: { mock: { sleep_ms: 60_000 } } });
    const id = task.id as string;
    const running = runCli(['run', '--until-idle'], { home: h.home, timeoutMs: T });
    try {
      let cmdlines: { pid: number; cmdline: string }[] = [];
      await waitFor(() => (cmdlines = cmdlinesSeenByNobody()).some((c) => c.cmdline.includes('mock-agent.mjs') && c.cmdline.includes('sleep_ms')), 'the mock agent to run');
      expect(cmdlines.filter((c) => c.cmdline.includes(MARKER) || c.cmdline.includes(SECRET)).map((c) => `${c.pid}: ${c.cmdline.slice(0, 400)}`)).toEqual([]);
    } finally {
      await h.call('cancel_task', { id });
      expect((await running).code).toBe(0);
    }
  });

  for (const [worker, bin, model] of [
    ['codex', 'codex', 'gpt-5.5'],
    ['claude-code', 'claude', 'claude-sonnet-4-5'],
    ['opencode', 'opencode', 'gpt-5.5'],
  ] as const) {
    it(`${worker}: the objective is in no command line and the home is unreadable while its turn runs`, { timeout: T }, async (ctx) => {
      if (await cliUnavailable(bin)) ctx.skip();
      const objective = `Fix the login flow. ${MARKER}-${worker}. The staging key is ${SECRET}. [[script:hold]]`;
      const { task } = await h.call('delegate_task', { objective, workspace: h.repo, kind: 'execute', mode: 'auto_execute', worker, gateway: 'fake', model });
      const id = task.id as string;
      const running = runCli(['run', '--until-idle'], { home: h.home, env: { [KEY_ENV]: 'sk-argv-test-key-000000' }, timeoutMs: T });
      const held = () => gw.requests.some((r) => r.summary?.script === 'hold' && !r.summary.side && JSON.stringify(r.body ?? {}).includes(`${MARKER}-${worker}`));
      try {
        await waitFor(held, `${worker}'s model request`);
        const cmdlines = cmdlinesSeenByNobody();
        expect(cmdlines.some((c) => c.cmdline.includes(bin)), `the scan saw ${bin} running`).toBe(true);
        const leaks = cmdlines.filter((c) => c.cmdline.includes(MARKER) || c.cmdline.includes(SECRET)).map((c) => `${c.pid}: ${c.cmdline.slice(0, 400)}`);
        expect(leaks).toEqual([]);
        expect(readableByNobody(walk(h.home))).toEqual([]);
      } finally {
        await h.call('cancel_task', { id });
        const run = await running;
        expect(run.code, run.stderr).toBe(0);
      }
      expect(getTask(h.engine.db, id)!.status).toBe('cancelled');
    });
  }
});
