import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));

let h: TestHome;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h?.cleanup();
});

describe('rate limits that wait', () => {
  it('puts a 429 back in the queue as the same attempt until the reset the CLI named, spending no retry and blocking no dependent', async () => {
    h = makeHome();
    const state = join(h.root, 'limited');
    // Two runs refused with "try again in 1s", then the provider takes requests again. No retries at all.
    h.configure(`[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "limited", ${JSON.stringify(state)}, "2", "1"]\nauth = "none"\n[limits]\nretry_budget = 0\n`);
    const r = await h.call('delegate_batch', {
      tasks: [
        { ref: 'a', objective: 'limited first', kind: 'explore', workspace: h.repo, worker: 'codex' },
        { ref: 'b', objective: 'after it', kind: 'explore', workspace: h.repo, depends_on: ['a'] },
      ],
    });
    const [a, b] = r.tasks.map((t: { id: string }) => t.id);
    const seen: { status: string; at: number }[] = [];
    h.engine.events.on('event', (e) => {
      if (e.taskId === a && e.type === 'task.status') seen.push({ status: String(e.payload.to), at: e.ts });
    });
    svc = await startSchedulerService(h.engine);
    const done = await waitTasks(h.engine, [a, b], 60_000);
    expect(done.reason).toBe('settled');
    const ta = getTask(h.engine.db, a)!;
    expect(ta.status).toBe('completed');
    expect(ta.attempt).toBe(1);
    expect(getTask(h.engine.db, b)!.status).toBe('completed');
    // Never failed, never blocked; it went back to the queue twice and waited for the reset each time.
    expect(seen.map((s) => s.status)).not.toContain('failed');
    const limited = listEvents(h.engine.db, { taskId: a, limit: 1000 }).events.filter((e) => e.type === 'task.rate_limited');
    expect(limited).toHaveLength(2);
    for (const e of limited) {
      // "try again in 1s", said after this attempt's start and before the event was written: the reset is
      // 1 s after a moment between the two (causal bounds, whatever the machine's load).
      const began = seen.filter((s) => s.status === 'starting' && s.at <= e.ts).at(-1)!;
      expect(Number(e.payload.until)).toBeGreaterThanOrEqual(began.at + 1000);
      expect(Number(e.payload.until)).toBeLessThanOrEqual(e.ts + 1000 + 50);
      // The next claim came only after the reset.
      const next = seen.find((s) => s.status === 'starting' && s.at > e.ts);
      expect(next!.at).toBeGreaterThanOrEqual(Number(e.payload.until));
    }
    expect(readFileSync(state, 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
  });
});
