import { renameSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { makeHome, type TestHome } from '../helpers/env.js';

// A person (or a host agent, through its own MCP server) changes a setting in one process and submits at
// once; the leader is another process that sees config.toml change only at its next poll. The task must
// run under the settings in force when it starts, not under the ones replaced a moment before.

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  // A poll so slow it never comes during the test: only the look at the task's start can see the change.
  h = makeHome({ configPollMs: 3_600_000 });
  h.engine.watch();
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});

it('a task runs under the config.toml another process wrote just before it started', async () => {
  svc = await startSchedulerService(h.engine);
  // Another process raises the cap of stored output events above the default 2,000 (an atomic replace, as
  // update_settings and editors write it).
  const tmp = `${h.engine.home.config}.other.tmp`;
  writeFileSync(tmp, '[output]\nmax_events = 5000\n');
  renameSync(tmp, h.engine.home.config);
  const lines = Array.from({ length: 2100 }, (_, i) => ({ type: 'message', text: `line ${i + 1}` }));
  const { task } = await h.call('delegate_task', { objective: 'chatty', workspace: h.repo, metadata: { mock: { events: lines } } });
  const r = await waitTasks(h.engine, [task.id], 120_000);
  expect(r.reason).toBe('settled');
  const { events } = await h.call('get_events', { task_id: task.id, limit: 5000 });
  const messages = events.filter((e: { type: string }) => e.type === 'worker.message').map((e: { payload: { text: string } }) => e.payload.text);
  expect(messages.at(-1)).toBe('line 2100');
  expect(events.some((e: { type: string }) => e.type === 'worker.output_truncated')).toBe(false);
});
