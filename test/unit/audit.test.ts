import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
beforeEach(async () => {
  h = makeHome();
  for (let i = 0; i < 5; i++) await h.call('delegate_task', { objective: `task ${i}`, workspace: h.repo });
});
afterEach(() => h.cleanup());

describe('audit verify', () => {
  it('passes on an untouched log', async () => {
    expect(await h.call('audit_verify')).toEqual({ ok: true, checked: 5 });
  });

  it('finds an edited event', async () => {
    h.engine.db.prepare(`UPDATE events SET payload = replace(payload, 'task 2', 'task X') WHERE seq = 3`).run();
    const r = await h.call('audit_verify');
    expect(r.ok).toBe(false);
    expect(r.broken).toMatchObject({ seq: 3, reason: expect.stringMatching(/modified/) });
  });

  it('finds a deleted event in the middle', async () => {
    h.engine.db.prepare('DELETE FROM events WHERE seq = 2').run();
    const r = await h.call('audit_verify');
    expect(r.ok).toBe(false);
    expect(r.broken.seq).toBe(2);
  });

  it('finds events deleted from the end', async () => {
    h.engine.db.prepare('DELETE FROM events WHERE seq >= 4').run();
    const r = await h.call('audit_verify');
    expect(r.ok).toBe(false);
    expect(r.broken.reason).toMatch(/deleted from the end/);
  });

  it('pages events by cursor', async () => {
    const p1 = await h.call('get_events', { limit: 2 });
    expect(p1.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2]);
    const p2 = await h.call('get_events', { cursor: p1.cursor, limit: 10 });
    expect(p2.events.map((e: { seq: number }) => e.seq)).toEqual([3, 4, 5]);
  });
});
