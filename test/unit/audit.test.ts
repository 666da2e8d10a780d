import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDb, SCHEMA_VERSION, schemaVersion, writeTx } from '../../main/store/db.js';
import { anchorChains, appendAnyEvent as appendEvent, GENESIS_HASH, hashChained, hashEvent, verifyAudit } from '../../main/store/events.js';
import { MIGRATIONS } from '../../main/store/migrations/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/procs.js';
import { startSchedulerService } from '../../main/app.js';
import { runWriters, writerStore } from '../helpers/event-writers.js';

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

const db = () => h.engine.db;
const POSTGRES = process.env.LIGHTWORKER_TEST_STORE === 'postgres';

/** The tasks made in beforeEach, oldest first (each chain's first event is its task's creation). */
function taskIds(): string[] {
  return (db().prepare("SELECT chain FROM events WHERE chain_pos = 1 AND chain <> '' ORDER BY seq").all() as { chain: string }[]).map((r) => r.chain);
}

function note(taskId: string, n: number): void {
  for (let i = 0; i < n; i++) writeTx(db(), () => appendEvent(db(), taskId, 'test.note', { i }));
}

function at(chain: string, pos: number): { seq: number; hash: string } {
  return db().prepare('SELECT seq, hash FROM events WHERE chain = ? AND chain_pos = ?').get(chain, pos) as { seq: number; hash: string };
}

/**
 * What an intruder who knows the scheme does: change the event at `fromPos`, recompute every hash after
 * it and move the head row along, so the chain is internally consistent again.
 */
function rewriteChain(chain: string, fromPos: number): void {
  type R = { seq: number; type: string; ts: number; payload: string; chain_pos: number };
  const rows = db().prepare('SELECT seq, type, ts, payload, chain_pos FROM events WHERE chain = ? AND chain_pos >= ? ORDER BY chain_pos').all(chain, fromPos) as R[];
  let prev = fromPos === 1 ? GENESIS_HASH : at(chain, fromPos - 1).hash;
  for (const r of rows) {
    const payload = r.chain_pos === fromPos ? JSON.stringify({ forged: true }) : r.payload;
    const hash = hashChained(prev, chain, r.chain_pos, r.type, r.ts, payload);
    db().prepare('UPDATE events SET payload = ?, prev_hash = ?, hash = ? WHERE seq = ?').run(payload, prev, hash, r.seq);
    prev = hash;
  }
  db().prepare('UPDATE chain_heads SET hash = ? WHERE chain = ?').run(prev, chain);
}

/** Change events' sequence numbers, each [from, to] in turn (a temporary number frees one for a swap). */
function renumber(moves: [number, number][]): void {
  for (const [from, to] of moves) db().prepare('UPDATE events SET seq = ? WHERE seq = ?').run(to, from);
}

async function broken(): Promise<{ seq: number; reason: string }> {
  const r = await h.call('audit_verify');
  expect(r.ok).toBe(false);
  return r.broken;
}

describe('audit verify: a chain per task, anchored', () => {
  let a: string;
  let b: string;
  beforeEach(() => {
    [a, b] = taskIds();
    note(a, 4); // task a's chain: its creation and 4 notes, positions 1..5
  });

  it('passes with multi-event chains and anchors', async () => {
    expect(anchorChains(db())).toBe(1);
    note(b, 2);
    expect(anchorChains(db())).toBe(2);
    expect(await h.call('audit_verify')).toEqual({ ok: true, checked: 11 });
  });

  it('finds an edit in the middle of a task chain', async () => {
    db().prepare(`UPDATE events SET payload = '{"i":99}' WHERE chain = ? AND chain_pos = 3`).run(a);
    expect(await broken()).toEqual({ seq: at(a, 3).seq, reason: expect.stringMatching(/was modified/) });
  });

  it('finds a deletion in the middle of a task chain', async () => {
    const next = at(a, 4).seq;
    db().prepare('DELETE FROM events WHERE chain = ? AND chain_pos = 3').run(a);
    expect(await broken()).toEqual({ seq: next, reason: `event 3 of task ${a} is missing (next present is event ${next}, position 4)` });
  });

  it('finds two events of a chain whose sequence numbers were swapped (the order the log reads in)', async () => {
    const [s2, s3, s4] = [at(a, 2).seq, at(a, 3).seq, at(a, 4).seq];
    renumber([[s2, -1], [s4, s2], [-1, s4]]);
    // Position 2 now holds the later number: position 3 reads as written before it.
    expect(await broken()).toEqual({ seq: s3, reason: `event ${s3} (position 3 of task ${a}) is numbered before event ${s4} at position 2 (sequence numbers were swapped)` });
  });

  it("finds a chain's newest event swapped with a later event of another chain (its head row records the number)", async () => {
    note(b, 2);
    const [s5, last] = [at(a, 5).seq, at(b, 3).seq];
    renumber([[s5, -1], [last, s5], [-1, last]]);
    const r = await broken();
    expect(r.reason).toMatch(/sequence numbers were (swapped|changed)/);
  });

  it("finds a task chain's tail deleted", async () => {
    const head = at(a, 5).seq;
    db().prepare('DELETE FROM events WHERE chain = ? AND chain_pos >= 4').run(a);
    expect(await broken()).toEqual({ seq: head, reason: expect.stringMatching(new RegExp(`events after position 3 of task ${a} were deleted from the end of its chain`)) });
  });

  it("finds a task's whole chain deleted with its head row, through the anchors", async () => {
    expect(anchorChains(db())).toBe(1);
    db().prepare('DELETE FROM events WHERE chain = ?').run(b);
    db().prepare('DELETE FROM chain_heads WHERE chain = ?').run(b);
    expect((await broken()).reason).toBe(`all events of task ${b} were deleted (anchor 1 recorded 1)`);
  });

  it("finds a chain's tail deleted with its head row moved back, through the anchors", async () => {
    expect(anchorChains(db())).toBe(1);
    const { hash } = at(a, 3);
    db().prepare('DELETE FROM events WHERE chain = ? AND chain_pos > 3').run(a);
    db().prepare('UPDATE chain_heads SET pos = 3, hash = ? WHERE chain = ?').run(hash, a);
    expect((await broken()).reason).toBe(`events 4..5 of task ${a}, anchored by anchor 1, were deleted`);
  });

  it('finds a chain rewritten with recomputed hashes, through the anchors', async () => {
    expect(anchorChains(db())).toBe(1);
    rewriteChain(a, 2);
    expect(await broken()).toEqual({ seq: at(a, 5).seq, reason: expect.stringMatching(/anchored by anchor 1, was rewritten/) });
  });

  it('cannot see tampering with events newer than the last anchor when the head row is moved along (the documented limit)', async () => {
    rewriteChain(a, 2);
    db().prepare('DELETE FROM events WHERE chain = ?').run(b);
    db().prepare('DELETE FROM chain_heads WHERE chain = ?').run(b);
    expect(await h.call('audit_verify')).toMatchObject({ ok: true });
  });

  it('finds an edited anchor', async () => {
    anchorChains(db());
    note(a, 1);
    anchorChains(db());
    db().prepare("UPDATE anchors SET heads = replace(heads, ',5,', ',4,') WHERE id = 1").run();
    expect(await broken()).toEqual({ seq: 0, reason: 'anchor 1 was modified (hash mismatch)' });
  });

  it('finds an anchor deleted in the middle', async () => {
    for (let i = 0; i < 3; i++) {
      note(a, 1);
      expect(anchorChains(db())).toBe(i + 1);
    }
    db().prepare('DELETE FROM anchors WHERE id = 2').run();
    expect(await broken()).toEqual({ seq: 0, reason: 'anchor 2 is missing (next present is 3)' });
  });

  it('finds the newest anchor deleted (the head rows remember what was anchored)', async () => {
    anchorChains(db());
    note(a, 1);
    anchorChains(db());
    db().prepare('DELETE FROM anchors WHERE id = 2').run();
    expect((await broken()).reason).toBe(`task ${a} was anchored up to position 6, but no anchor records that (anchors were deleted from the end)`);
  });

  it('anchorChains anchors only the heads that moved, and returns null when none did', () => {
    expect(anchorChains(db())).toBe(1);
    expect(anchorChains(db())).toBeNull();
    note(a, 1);
    expect(anchorChains(db())).toBe(2);
    const row = db().prepare('SELECT heads FROM anchors WHERE id = 2').get() as { heads: string };
    expect(JSON.parse(row.heads)).toEqual([[a, 6, at(a, 6).hash]]);
    expect(anchorChains(db())).toBeNull();
  });

  it('anchorChains adds no anchor while the newest is younger than minIntervalMs', () => {
    expect(anchorChains(db(), 10_000, { minIntervalMs: 5000 })).toBe(1);
    note(a, 1);
    expect(anchorChains(db(), 14_999, { minIntervalMs: 5000 })).toBeNull();
    expect(anchorChains(db(), 15_000, { minIntervalMs: 5000 })).toBe(2);
  });

  it('stays whole with two processes racing on the same chains (first inserts included) while two others anchor', async () => {
    const K = 12;
    const out = await runWriters(writerStore(h.engine), [
      { name: 'w1', mode: 'race', args: [K, 25] },
      { name: 'w2', mode: 'race', args: [K, 25] },
      { name: 'a1', mode: 'anchor', args: [60] },
      { name: 'a2', mode: 'anchor', args: [60] },
    ]);
    for (let k = 1; k <= K; k++) {
      const rows = db().prepare('SELECT chain_pos, payload FROM events WHERE chain = ? ORDER BY chain_pos').all(`race-${k}`) as { chain_pos: number; payload: string }[];
      expect(rows.map((r) => r.chain_pos)).toEqual([1, 2]);
      expect(rows.map((r) => (JSON.parse(r.payload) as { by: string }).by).sort()).toEqual(['w1', 'w2']);
    }
    const shared = db().prepare("SELECT chain_pos FROM events WHERE chain = 'shared' ORDER BY chain_pos").all() as { chain_pos: number }[];
    expect(shared.map((r) => r.chain_pos)).toEqual(Array.from({ length: 2 * K }, (_, i) => i + 1));
    const anchors = db().prepare('SELECT COUNT(*) AS n, MAX(id) AS top FROM anchors').get() as { n: number; top: number };
    expect(anchors.n).toBe(out[2].anchors + out[3].anchors);
    expect(anchors.top).toBe(anchors.n);
    anchorChains(db());
    expect(await h.call('audit_verify')).toEqual({ ok: true, checked: 5 + 4 + 4 * K });
    // On PostgreSQL the racers' first inserts of a chain collide (unique violation) and PgDb runs the
    // loser's transaction again; SQLite's write lock serializes them instead.
    const retries = out[0].attempts + out[1].attempts - 2 * K;
    if (POSTGRES) expect(retries).toBeGreaterThan(0);
    else expect(retries).toBe(0);
  });
});

describe('audit verify while runners append', () => {
  it('never reports tampering for events committed while it reads (one snapshot)', async () => {
    const writing = runWriters(writerStore(h.engine), [
      { name: 'r1', mode: 'bench', args: [3000, 3] },
      { name: 'r2', mode: 'bench', args: [3000, 0] },
    ]);
    let done = false;
    const finished = writing.finally(() => (done = true));
    const results: { ok: boolean }[] = [];
    while (!done) {
      results.push(verifyAudit(db()));
      await new Promise((r) => setTimeout(r, 5));
    }
    const out = await finished;
    expect(out[0].inserts + out[1].inserts).toBeGreaterThan(0);
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.length).toBeGreaterThan(1);
    expect(verifyAudit(db())).toEqual({ ok: true, checked: 5 + out[0].inserts + out[1].inserts });
  });
});

// SQLite's own history (PostgreSQL starts at today's schema): registered in the sqlite project only.
(POSTGRES ? () => undefined : describe)('audit verify across the migration to per-task chains', () => {
  it('verifies a log begun at schema 7 (one global chain) and still finds an edit or a deleted tail there', () => {
    const path = join(h.root, 'v7.db');
    const raw = new Database(path);
    for (const m of MIGRATIONS.slice(0, 7)) m.up(raw);
    raw.pragma('user_version = 7');
    // What appendEvent wrote before migration 008.
    let prev = GENESIS_HASH;
    for (let seq = 1; seq <= 4; seq++) {
      const taskId = seq % 2 ? 'T1' : null;
      const payload = JSON.stringify({ seq });
      const hash = hashEvent(prev, seq, taskId, 'legacy.event', 1000 + seq, payload);
      raw.prepare('INSERT INTO events (seq, task_id, type, ts, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)').run(seq, taskId, 'legacy.event', 1000 + seq, payload, prev, hash);
      prev = hash;
    }
    raw.prepare('INSERT INTO audit_head (id, seq, hash) VALUES (1, 4, ?)').run(prev);
    raw.close();

    const v8 = openDb({ path });
    try {
      expect(schemaVersion(v8)).toBe(SCHEMA_VERSION);
      expect(writeTx(v8, () => appendEvent(v8, 'T1', 'new.event'))).toBe(5);
      writeTx(v8, () => appendEvent(v8, null, 'new.event'));
      expect(anchorChains(v8)).toBe(1);
      expect(verifyAudit(v8)).toEqual({ ok: true, checked: 6 });
      v8.prepare("UPDATE events SET payload = '{\"seq\":9}' WHERE seq = 2").run();
      expect(verifyAudit(v8)).toEqual({ ok: false, checked: 1, broken: { seq: 2, reason: 'event 2 was modified (hash mismatch)' } });
      v8.prepare("UPDATE events SET payload = '{\"seq\":2}' WHERE seq = 2").run();
      expect(verifyAudit(v8).ok).toBe(true);
      v8.prepare('DELETE FROM events WHERE seq = 4').run();
      expect(verifyAudit(v8).broken).toEqual({ seq: 4, reason: 'events 4..4 were deleted from the end of the log' });
    } finally {
      v8.close();
    }
  });
});

describe('anchoring on the heartbeat', () => {
  it('a leading scheduler anchors the chain heads once events were written, and not again while nothing moves', async () => {
    const svc = await startSchedulerService(h.engine);
    try {
      const count = () => (h.engine.db.prepare('SELECT COUNT(*) AS n FROM anchors').get() as { n: number }).n;
      await until(() => count() === 1, 20_000, 'the first anchor');
      const anchored = h.engine.db.prepare('SELECT heads FROM anchors WHERE id = 1').get() as { heads: string };
      expect((JSON.parse(anchored.heads) as unknown[]).length).toBeGreaterThanOrEqual(5); // the five tasks' chains
      await new Promise((r) => setTimeout(r, 2500)); // two more beats, nothing written
      expect(count()).toBe(1);
      expect(verifyAudit(h.engine.db).ok).toBe(true);
    } finally {
      await svc.stop();
    }
  });
});
