import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../main/core/config.js';
import { runVerification, type PreparedWorkspace } from '../../main/isolation/workspace.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/procs.js';
import { newExecuteTask, simulateRun } from './isolation.helpers.js';

let h: TestHome;
afterEach(() => h?.cleanup());

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

function homeWithTimeout(seconds: number): TestHome {
  const config = defaultConfig();
  config.verify.timeout_s = seconds;
  config.scheduler.kill_grace_ms = 300;
  return makeHome({ config });
}

describe('runVerification', () => {
  it('records exit code, duration and output tail per command, stopping at the first failure', async () => {
    h = makeHome();
    const t = await newExecuteTask(h, {
      verify: [
        ['node', '-e', 'console.log("x".repeat(20000)); console.log("LAST LINE")'],
        'echo from the shell; exit 4',
        ['node', '-e', 'never runs'],
      ],
    });
    const run = await simulateRun(h, t, () => {});
    expect(run.verify?.ok).toBe(false);
    const [first, second] = run.verify!.results;
    expect(run.verify!.results).toHaveLength(2);
    expect(first.exitCode).toBe(0);
    expect(first.durationMs).toBeGreaterThan(0);
    expect(Buffer.byteLength(first.outputTail)).toBeLessThanOrEqual(8 * 1024);
    expect(first.outputTail.trimEnd().endsWith('LAST LINE')).toBe(true);
    expect(second).toMatchObject({ command: 'echo from the shell; exit 4', exitCode: 4, timedOut: false });
    expect(second.outputTail).toContain('from the shell');
    const types = listEvents(h.engine.db, { taskId: t.id, types: ['verify.started', 'verify.command', 'verify.completed'] }).events.map(
      (e) => e.type,
    );
    expect(types).toEqual(['verify.started', 'verify.command', 'verify.command', 'verify.completed']);
    const done = listEvents(h.engine.db, { taskId: t.id, types: ['verify.completed'] }).events[0];
    expect(done.payload).toMatchObject({ ok: false, ran: 2, of: 3 });
    expect(existsSync(done.payload.log as string)).toBe(true);
  });

  it('times out a sleeping command and kills its whole process tree', async () => {
    h = homeWithTimeout(1);
    const t = await newExecuteTask(h, { verify: [['sh', '-c', 'sleep 300 & echo $! > grandchild.pid; echo started; sleep 300']] });
    const run = await simulateRun(h, t, () => {});
    const r = run.verify!.results[0];
    expect(r).toMatchObject({ timedOut: true, exitCode: null });
    expect(r.outputTail).toContain('started');
    const grandchild = Number(readFileSync(join(run.ws.workdir, 'grandchild.pid'), 'utf8'));
    expect(grandchild).toBeGreaterThan(0);
    await until(() => !alive(grandchild), 5000, 'the grandchild to die');
    const ev = listEvents(h.engine.db, { taskId: t.id, types: ['verify.command'] }).events[0];
    expect(ev.payload).toMatchObject({ timedOut: true, exitCode: null });
  });

  it('keeps the verdict of a command that left a background process holding its output, and ends that process', async () => {
    h = homeWithTimeout(30);
    const t = await newExecuteTask(h, { verify: [['sh', '-c', 'sleep 300 & echo $! > bg.pid; echo done']] });
    const run = await simulateRun(h, t, () => {});
    expect(run.verify!.results[0]).toMatchObject({ exitCode: 0, timedOut: false });
    expect(run.verify!.ok).toBe(true);
    const bg = Number(readFileSync(join(run.ws.workdir, 'bg.pid'), 'utf8'));
    // SIGKILL went to its group before runVerification returned; on a busy machine death lands a moment later.
    await until(() => !alive(bg), 5000, 'the background process to die');
  });

  it('stops on abort, killing the running command', async () => {
    h = makeHome();
    const t = await newExecuteTask(h, { verify: [['sleep', '300']] });
    const ac = new AbortController();
    const ws: PreparedWorkspace = { workdir: h.repo, env: {}, state: {} };
    setTimeout(() => ac.abort(), 200);
    const r = await runVerification(h.engine, requireTask(h.engine.db, t.id), ws, ac.signal);
    expect(r.ok).toBe(false);
    expect(r.results[0].exitCode).toBeNull();
    expect(listEvents(h.engine.db, { taskId: t.id, types: ['verify.completed'] }).events[0].payload).toMatchObject({
      ok: false,
      aborted: true,
    });
  }, 20_000);

  it('gives commands a minimal environment (ports, no LightWorker secrets) and redacts the tail', async () => {
    h = makeHome();
    process.env.LIGHTWORKER_SECRET_TEST = 'hunter2-should-not-leak';
    process.env.OPENAI_API_KEY = 'sk-test-abcdefghijklmnopqrstuvwxyz0123456789';
    try {
      const t = await newExecuteTask(h, {
        verify: [['node', '-e', 'console.log(JSON.stringify(process.env)); console.log("api_key=" + "abcd1234efgh5678")']],
      });
      const run = await simulateRun(h, t, () => {});
      const tail = run.verify!.results[0].outputTail;
      expect(tail).not.toContain('hunter2-should-not-leak');
      expect(tail).not.toContain('OPENAI_API_KEY');
      expect(tail).toContain(`"LIGHTWORKER_PORT":"${run.ws.env.LIGHTWORKER_PORT}"`);
      expect(tail).toContain('"LIGHTWORKER_PORT_COUNT":"10"');
      expect(tail).toContain('api_key=[REDACTED]');
    } finally {
      delete process.env.LIGHTWORKER_SECRET_TEST;
      delete process.env.OPENAI_API_KEY;
    }
  });
});
