// Scheduler figures (issue 3): drain rate, dispatch latency vs a bare spawn, cross-process wait and
// cancel latency, scheduler RSS with 10k tasks in the database.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { startSchedulerService } from '../../main/scheduler/service.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { startCli } from '../helpers/cli.js';
import { makeHome } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';

const AGENT = fileURLToPath(new URL('../../main/workers/mock-agent.mjs', import.meta.url));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function bareSpawnMs(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const c = spawn(process.execPath, [AGENT, '--spec', '{}', '--prompt', 'x'], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise<void>((r) => c.once('spawn', () => r()));
    out.push(performance.now() - t);
    await new Promise((r) => c.once('close', r));
  }
  return out;
}

export async function run(): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  // 1. Drain 200 trivial tasks at concurrency 4, in-process leader.
  {
    const h = makeHome();
    const ctx = { engine: h.engine, face: 'cli' as const, depth: 0 };
    const ids: string[] = [];
    for (let b = 0; b < 50; b++) {
      const r = (await runCommand(COMMANDS, ctx, 'delegate_batch', { tasks: Array.from({ length: 4 }, (_, i) => ({ objective: `t${b}.${i}`, workspace: h.repo })) })) as { tasks: { id: string }[] };
      ids.push(...r.tasks.map((x) => x.id));
    }
    const t = performance.now();
    const svc = await startSchedulerService(h.engine);
    await waitTasks(h.engine, ids, 600_000);
    const ms = performance.now() - t;
    await svc.stop();
    figures['drain 200 mock tasks @4, s'] = ms / 1000;
    figures['drain, tasks/s'] = (200 / ms) * 1000;
    // queued → spawn: claim event to "worker spawned" event per task.
    const ev = listEvents(h.engine.db, { types: ['task.status'], limit: 5000 }).events;
    const claimed = new Map<string, number>();
    const lat: number[] = [];
    const queuedAt = new Map<string, number>();
    for (const e of listEvents(h.engine.db, { types: ['task.created'], limit: 5000 }).events) queuedAt.set(e.taskId!, e.ts);
    for (const e of ev) {
      if (e.payload.to === 'starting') claimed.set(e.taskId!, e.ts);
      if (e.payload.to === 'running' && claimed.has(e.taskId!)) lat.push(e.ts - claimed.get(e.taskId!)!);
    }
    figures['claim → worker spawned p50, ms'] = pct(lat, 50);
    figures['claim → worker spawned p95, ms'] = pct(lat, 95);
    h.cleanup();
  }
  // 2. Dispatch latency queued → spawn for a lone task on an idle leader, vs a bare spawn.
  {
    const h = makeHome();
    const ctx = { engine: h.engine, face: 'cli' as const, depth: 0 };
    const svc = await startSchedulerService(h.engine);
    const lat: number[] = [];
    for (let i = 0; i < 30; i++) {
      const t = Date.now();
      const r = (await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `lone ${i}`, workspace: h.repo })) as { task: { id: string } };
      await waitTasks(h.engine, [r.task.id], 30_000);
      const running = listEvents(h.engine.db, { taskId: r.task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'running')!;
      lat.push(running.ts - t);
    }
    await svc.stop();
    const bare = await bareSpawnMs(30);
    figures['submit → worker spawned p50, ms'] = pct(lat, 50);
    figures['submit → worker spawned p95, ms'] = pct(lat, 95);
    figures['bare child_process.spawn p50, ms'] = pct(bare, 50);
    figures['bare child_process.spawn p95, ms'] = pct(bare, 95);
    h.cleanup();
  }
  // 3. Completion → wait return across processes, and cancel → seen by the leader across processes.
  {
    const h = makeHome();
    const ctx = { engine: h.engine, face: 'cli' as const, depth: 0 };
    const leader = startCli(['run'], { home: h.home });
    const waitLat: number[] = [];
    const cancelLat: number[] = [];
    await new Promise((r) => setTimeout(r, 1500));
    for (let i = 0; i < 20; i++) {
      const r = (await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `w${i}`, workspace: h.repo, metadata: { mock: { sleep_ms: 200 } } })) as { task: { id: string } };
      await waitTasks(h.engine, [r.task.id], 30_000);
      const done = listEvents(h.engine.db, { taskId: r.task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'completed');
      if (done) waitLat.push(Date.now() - done.ts);
    }
    for (let i = 0; i < 10; i++) {
      const r = (await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `c${i}`, workspace: h.repo, metadata: { mock: { sleep_ms: 30_000 } } })) as { task: { id: string } };
      await until(() => listEvents(h.engine.db, { taskId: r.task.id, types: ['worker.started'] }).events.length > 0, 30_000, 'start');
      const t = Date.now();
      await runCommand(COMMANDS, ctx, 'cancel_task', { id: r.task.id });
      await waitTasks(h.engine, [r.task.id], 30_000);
      // The leader's abort shows as the moment the task left running (kill of the tree included).
      const ended = listEvents(h.engine.db, { taskId: r.task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'cancelled')!;
      cancelLat.push(ended.ts - t);
    }
    figures['completion → wait returns (other process) p50, ms'] = pct(waitLat, 50);
    figures['completion → wait returns (other process) p95, ms'] = pct(waitLat, 95);
    figures['cancel → task cancelled, tree killed (other process) p50, ms'] = pct(cancelLat, 50);
    figures['cancel → task cancelled, tree killed (other process) p95, ms'] = pct(cancelLat, 95);
    leader.kill('SIGTERM');
    await exited(leader);
    h.cleanup();
  }
  // 4. Peak RSS of a leader process with 10k tasks in the database (1k runnable, drained).
  {
    const h = makeHome();
    const ctx = { engine: h.engine, face: 'cli' as const, depth: 0 };
    for (let b = 0; b < 90; b++) {
      await runCommand(COMMANDS, ctx, 'delegate_batch', { tasks: Array.from({ length: 100 }, (_, i) => ({ objective: `held ${b}.${i}`, workspace: h.repo, kind: 'execute' })) });
    }
    for (let b = 0; b < 10; b++) {
      await runCommand(COMMANDS, ctx, 'delegate_batch', { tasks: Array.from({ length: 100 }, (_, i) => ({ objective: `run ${b}.${i}`, workspace: h.repo })) });
    }
    const leader = startCli(['run', '--until-idle'], { home: h.home });
    let peak = 0;
    const timer = setInterval(() => {
      try {
        const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${leader.pid}/status`, 'utf8'));
        if (m) peak = Math.max(peak, Number(m[1]));
      } catch {
        // exited
      }
    }, 20);
    const t = performance.now();
    await exited(leader);
    clearInterval(timer);
    figures['leader peak RSS, 10k tasks in db (1k drained), MiB'] = peak / 1024;
    figures['drain 1k with 9k awaiting approval, s'] = (performance.now() - t) / 1000;
    h.cleanup();
  }
  return figures;
}
