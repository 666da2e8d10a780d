import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { currentLease } from '../../main/store/leases.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
import { BIN, StdioChild } from './mcp.helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('two MCP processes and a CLI run on one home', () => {
  it('elect exactly one leader (never an MCP session); tasks run once; work outlives the MCP sessions', async () => {
    const { dir, cleanup } = tempDir('lw-mcp-leader-');
    cleanups.push(cleanup);
    const home = join(dir, 'home');
    withTestStore(home);
    const repo = makeRepo(join(dir, 'repo'));
    const a = new StdioChild(home);
    const b = new StdioChild(home);
    cleanups.push(() => a.stop(), () => b.stop());
    await Promise.all([a.initialize(), b.initialize()]);
    const observer = new Engine({ home });
    cleanups.push(() => observer.close());
    const mcpPids = [a.proc.pid, b.proc.pid];

    // A CLI scheduler joins and leads: MCP sessions never lead themselves.
    const run = spawn(process.execPath, [BIN, 'run', '--timeout', '90'], { env: { ...process.env, LIGHTWORKER_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    const runExit = new Promise<number | null>((r) => run.on('exit', (c) => r(c)));
    let runErr = '';
    run.stderr.on('data', (d) => (runErr += d));
    cleanups.push(() => void run.kill('SIGKILL'));
    await expect.poll(() => currentLease(observer.db)?.pid, { timeout: 20_000 }).toBe(run.pid);

    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await b.callTool('delegate_task', { objective: `job ${i}`, workspace: repo, kind: 'explore', metadata: { mock: { sleep_ms: 200 } } });
      ids.push(r.result.structuredContent.task.id);
    }
    const w = await a.callTool('wait_tasks', { ids, timeout_s: 50 });
    expect(w.result.structuredContent.reason).toBe('settled');
    expect(w.result.structuredContent.tasks.map((t: any) => t.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    // A task is over for its runner only once its workspace is released (custody checked, snapshot given
    // back): the status line says idle then. A SIGTERM before that drains (exit 0), after it exits 143.
    await expect.poll(() => runErr, { timeout: 30_000 }).toMatch(/idle · ended here: 4 completed/);
    run.kill('SIGTERM');
    expect(await runExit, runErr).toBe(143);

    // One leader all along, and every task ran exactly once.
    const leaders = () => (observer.db.prepare(`SELECT payload FROM events WHERE type = 'scheduler.leader'`).all() as { payload: string }[]).map((l) => JSON.parse(l.payload).pid as number);
    const dump = () => JSON.stringify(observer.db.prepare(`SELECT seq, ts, type, task_id, payload FROM events WHERE type IN ('scheduler.leader', 'task.created', 'task.status') ORDER BY seq`).all());
    expect(leaders(), dump()).toEqual([run.pid]);
    for (const id of ids) {
      const starts = observer.db.prepare(`SELECT COUNT(*) AS n FROM events WHERE task_id = ? AND type = 'task.status' AND json_extract(payload, '$.to') = 'running'`).get(id) as { n: number };
      expect(starts.n).toBe(1);
    }

    // Nobody leads now. New work makes a session start a background runner, which outlives both sessions.
    const r = await b.callTool('delegate_task', { objective: 'long job', workspace: repo, kind: 'explore', metadata: { mock: { sleep_ms: 4000 } } });
    const longId = r.result.structuredContent.task.id as string;
    await expect.poll(() => observer.db.prepare('SELECT status FROM tasks WHERE id = ?').get(longId), { timeout: 30_000 }).toEqual({ status: 'running' });
    const daemonPid = currentLease(observer.db)!.pid;
    expect(mcpPids).not.toContain(daemonPid);
    await a.stop();
    await b.stop();
    await expect.poll(() => observer.db.prepare('SELECT status FROM tasks WHERE id = ?').get(longId), { timeout: 30_000 }).toEqual({ status: 'completed' });
    expect(leaders().slice(1)).toEqual([daemonPid]);
    // The background runner exits once idle.
    await expect.poll(() => { try { process.kill(daemonPid, 0); return true; } catch { return false; } }, { timeout: 20_000 }).toBe(false);
  }, 120_000);
});
