import { describe, expect, it } from 'vitest';
import { createNotifier, type NotificationSpec } from '../../main/desktop/notifier.js';
import type { EventRow } from '../../main/store/events.js';

/** A fake clock: timers fire only when the test advances time. */
function fakeTimers() {
  let now = 0;
  let timers: { at: number; fn: () => void; id: number }[] = [];
  let next = 1;
  return {
    setTimer: (fn: () => void, ms: number) => {
      const id = next++;
      timers.push({ at: now + ms, fn, id });
      return id;
    },
    clearTimer: (id: unknown) => (timers = timers.filter((t) => t.id !== id)),
    advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.fn();
      }
      now = until;
    },
  };
}

let seq = 0;
const status = (taskId: string, to: string): EventRow => ({ seq: ++seq, taskId, type: 'task.status', ts: 0, payload: { from: 'queued', to } });

function setup(settings = { approvals: true, failures: true, completions: false }) {
  const shown: NotificationSpec[] = [];
  const clock = fakeTimers();
  const n = createNotifier({ show: (x) => shown.push(x), settings: () => settings, taskName: (id) => `task ${id}`, approvalWindowMs: 5000, quietWindowMs: 15000, ...clock });
  return { shown, clock, n, settings };
}

describe('notifier', () => {
  it('notifies an approval at once, and a click target opens that task', () => {
    const { shown, n } = setup();
    n.onEvent(status('A', 'awaiting_approval'));
    expect(shown).toEqual([{ title: 'Approval needed', body: 'task A', taskId: 'A', route: '#/tasks/A', silent: false }]);
  });

  it('collapses a burst of approvals into one follow-up after the window', () => {
    const { shown, n, clock } = setup();
    for (const id of ['A', 'B', 'C', 'D']) n.onEvent(status(id, 'awaiting_approval'));
    expect(shown).toHaveLength(1);
    clock.advance(5000);
    expect(shown).toHaveLength(2);
    expect(shown[1]).toMatchObject({ title: '3 more tasks need approval', route: '#/inbox', taskId: null, silent: false });
    clock.advance(5000);
    expect(shown).toHaveLength(2);
    // After a quiet window, the next approval notifies at once again.
    n.onEvent(status('E', 'awaiting_approval'));
    expect(shown).toHaveLength(3);
  });

  it('batches failures quietly; completions only when enabled', () => {
    const { shown, n, clock, settings } = setup();
    n.onEvent(status('A', 'failed'));
    n.onEvent(status('B', 'completed'));
    n.onEvent(status('C', 'timed_out'));
    expect(shown).toHaveLength(0);
    clock.advance(15000);
    expect(shown).toEqual([{ title: 'Tasks: 2 failed', body: 'task A, task C', taskId: null, route: '#/tasks', silent: true }]);
    settings.completions = true;
    n.onEvent(status('D', 'completed'));
    clock.advance(15000);
    expect(shown[1]).toMatchObject({ title: 'Task completed', taskId: 'D', silent: true });
  });

  it('respects turned-off approvals and ignores other events', () => {
    const { shown, n, clock } = setup({ approvals: false, failures: false, completions: false });
    n.onEvent(status('A', 'awaiting_approval'));
    n.onEvent(status('B', 'failed'));
    n.onEvent({ seq: ++seq, taskId: 'C', type: 'task.created', ts: 0, payload: {} });
    clock.advance(60000);
    expect(shown).toEqual([]);
  });

  it("notifies a worker's question or permission request at once, each naming what it asks, opening the inbox", () => {
    const { shown, n } = setup();
    const req = (taskId: string, payload: Record<string, unknown>): EventRow => ({ seq: ++seq, taskId, type: 'request.created', ts: 0, payload });
    n.onEvent(req('A', { kind: 'question', question: 'English or French?' }));
    n.onEvent(req('B', { kind: 'permission', question: 'Bash: npm publish', tool: 'Bash', command: 'npm publish' }));
    expect(shown).toEqual([
      { title: 'Question from a task', body: 'task A — English or French?', taskId: 'A', route: '#/inbox', silent: false },
      { title: 'Permission requested', body: 'task B — Bash: npm publish', taskId: 'B', route: '#/inbox', silent: false },
    ]);
  });

  it('stays quiet about requests when notifications.requests is off', () => {
    const { shown, n } = setup({ approvals: true, failures: true, completions: false, requests: false } as never);
    n.onEvent({ seq: ++seq, taskId: 'A', type: 'request.created', ts: 0, payload: { kind: 'question', question: 'x?' } });
    expect(shown).toEqual([]);
  });
});
