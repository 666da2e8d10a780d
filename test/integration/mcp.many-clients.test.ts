// Many agent clients on one home: N real `lightworker mcp` processes (LIGHTWORKER_TEST_MCP_CLIENTS, default 30;
// the chaos run has 100) and a `lightworker run` leading, every client delegating at the same moment and then
// waiting for its task, while another connection holds the store's write lock for 6 s (longer than SQLite's
// 5 s busy timeout: a backup, a `sqlite3` shell). Before busy handling every delegate_task answered
// `internal: database is locked` with a stack trace on stderr, and the leader's lapsed lease was there for
// the taking.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { currentLease } from '../../main/store/leases.js';
import { getTask } from '../../main/store/tasks.js';
import { runManyClients } from '../chaos/many-clients.js';
import { findMarkedProcesses } from '../chaos/observe.js';
import { startCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
import { StdioChild } from './mcp.helpers.js';

const CLIENTS = Number(process.env.LIGHTWORKER_TEST_MCP_CLIENTS ?? 30);

describe('many MCP clients on one home', () => {
  it(`${CLIENTS} clients delegating and waiting at once: nothing refused or internal, nothing orphaned, the leader keeps its lease`, async () => {
    const r = await runManyClients({ clients: CLIENTS, holdLockMs: 6000, log: () => undefined });
    const figures = { refused: r.refused, internal: r.internal, falseOrphans: r.falseOrphans, leaseMoves: r.leaseMoves, notCompleted: r.notCompleted };
    expect(figures, `${JSON.stringify(r, null, 1)}`).toEqual({ refused: 0, internal: 0, falseOrphans: 0, leaseMoves: 0, notCompleted: 0 });
    expect(r.tasks).toBe(CLIENTS);
  }, 600_000);
});

describe('a live leader starved for longer than its lease', () => {
  it('keeps its lease: an MCP session starts no runner that would take it over, and its running task completes', async () => {
    const { dir, cleanup } = tempDir('lw-mcp-starved-');
    const home = join(dir, 'home');
    withTestStore(home);
    const repo = makeRepo(join(dir, 'repo'));
    const leader = startCli(['run'], { home });
    const client = new StdioChild(home);
    const observer = new Engine({ home });
    try {
      await expect.poll(() => currentLease(observer.db)?.pid, { timeout: 30_000 }).toBe(leader.pid);
      await client.initialize();
      const r = await client.callTool('delegate_task', { objective: 'a task that outlives a stall', workspace: repo, kind: 'explore', metadata: { mock: { sleep_ms: 6000 } } });
      const id = r.result.structuredContent.task.id as string;
      await expect.poll(() => getTask(observer.db, id)?.status, { timeout: 30_000 }).toBe('running');
      // Stopped for twice its 3 s lease (a process starved of CPU, a debugger): late beats, but alive.
      leader.kill('SIGSTOP');
      const stoppedAt = Date.now();
      await expect.poll(() => Date.now() - (currentLease(observer.db)?.expiresAt ?? 0) > 3000, { timeout: 20_000 }).toBe(true);
      const standbyWaited = Date.now() - stoppedAt;
      leader.kill('SIGCONT');
      const w = await client.callTool('wait_tasks', { ids: [id], timeout_s: 50 });
      const leaders = (observer.db.prepare(`SELECT payload FROM events WHERE type = 'scheduler.leader'`).all() as { payload: string }[]).map((e) => JSON.parse(e.payload).pid as number);
      expect({ status: w.result.structuredContent.tasks[0].status, leaders }, `stopped ${standbyWaited} ms`).toEqual({ status: 'completed', leaders: [leader.pid] });
    } finally {
      leader.kill('SIGCONT');
      leader.kill('SIGKILL');
      await client.stop();
      observer.close();
      killBackgroundRunners(home);
      cleanup();
    }
  }, 120_000);
});

/** Runners an MCP session started for this home (detached, so not our children): found by the home in their argv. */
function killBackgroundRunners(home: string): void {
  for (const p of findMarkedProcesses({ home })) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
