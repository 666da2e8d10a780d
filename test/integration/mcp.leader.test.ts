import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { currentLease } from '../../main/scheduler/lease.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { BIN, StdioChild } from './mcp.helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('two MCP processes and a CLI run on one home', () => {
  it('elect exactly one leader; tasks run once; a standby takes over when the leader goes', async () => {
    const { dir, cleanup } = tempDir('lw-mcp-leader-');
    cleanups.push(cleanup);
    const home = join(dir, 'home');
    const repo = makeRepo(join(dir, 'repo'));
    const a = new StdioChild(home);
    const b = new StdioChild(home);
    cleanups.push(() => a.stop(), () => b.stop());
    await Promise.all([a.initialize(), b.initialize()]);

    const observer = new Engine({ home });
    cleanups.push(() => observer.close());
    const mcpPids = [a.proc.pid, b.proc.pid];
    await expect.poll(() => currentLease(observer.db)?.pid, { timeout: 20_000 }).toSatisfy((pid) => mcpPids.includes(pid as number));
    const leaderPid = currentLease(observer.db)!.pid;

    // A CLI scheduler joins: it must stand by, not lead.
    const run = spawn(process.execPath, [BIN, 'run', '--until-idle', '--timeout', '60'], { env: { ...process.env, LIGHTWORKER_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let runErr = '';
    run.stderr.on('data', (d) => (runErr += d));
    const runExit = new Promise<number | null>((r) => run.on('exit', (c) => r(c)));
    cleanups.push(() => void run.kill('SIGKILL'));

    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await b.callTool('delegate_task', { objective: `job ${i}`, workspace: repo, kind: 'explore', metadata: { mock: { sleep_ms: 200 } } });
      ids.push(r.result.structuredContent.task.id);
    }
    const w = await a.callTool('wait_tasks', { ids, timeout_s: 50 });
    expect(w.result.structuredContent.reason).toBe('settled');
    expect(w.result.structuredContent.tasks.map((t: any) => t.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(await runExit).toBe(0);
    expect(runErr).toMatch(/another process leads/);

    // One leader all along, and every task ran exactly once.
    const leaders = observer.db.prepare(`SELECT payload FROM events WHERE type = 'scheduler.leader'`).all() as { payload: string }[];
    expect(new Set(leaders.map((l) => JSON.parse(l.payload).pid))).toEqual(new Set([leaderPid]));
    for (const id of ids) {
      const starts = observer.db.prepare(`SELECT COUNT(*) AS n FROM events WHERE task_id = ? AND type = 'task.status' AND json_extract(payload, '$.to') = 'running'`).get(id) as { n: number };
      expect(starts.n).toBe(1);
    }

    // The leader goes away; the other MCP process takes over.
    const [leader, standby] = leaderPid === a.proc.pid ? [a, b] : [b, a];
    await leader.stop();
    await expect.poll(() => currentLease(observer.db)?.pid, { timeout: 20_000 }).toBe(standby.proc.pid);
    const r = await standby.callTool('delegate_task', { objective: 'after takeover', workspace: repo, kind: 'explore' });
    const w2 = await standby.callTool('wait_tasks', { ids: [r.result.structuredContent.task.id], timeout_s: 30 });
    expect(w2.result.structuredContent.tasks[0].status).toBe('completed');
  }, 120_000);
});
