import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { until } from '../helpers/procs.js';

/** `lightworker backup FILE`: a consistent copy while a leader drains tasks, checked, private, never half-written. */
describe('backup of a home while runners work', () => {
  let dir: string;
  let cleanup: () => void;
  let home: string;
  let repo: string;
  let leader: ReturnType<typeof startCli> | undefined;
  const json = async (args: string[]) => {
    const r = await runCli(args, { home });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };

  beforeAll(() => {
    ({ dir, cleanup } = tempDir('lw-backup-'));
    home = join(dir, 'home');
    repo = makeRepo(join(dir, 'repo'));
  });
  afterAll(() => {
    leader?.kill('SIGKILL');
    cleanup?.();
  });

  it('copies a consistent store mid-drain: each copy opens, passes quick_check and the audit chain, and holds every task it saw', async () => {
    const batch = { tasks: Array.from({ length: 40 }, (_, i) => ({ objective: `task ${i}`, workspace: repo, worker: 'mock', kind: 'explore' })) };
    writeFileSync(join(dir, 'batch.json'), JSON.stringify(batch));
    await json(['submit', '--batch', join(dir, 'batch.json'), '--json']);
    leader = startCli(['run'], { home });
    const copies: { file: string; tasks: number }[] = [];
    // Back up while the leader writes (status changes, events): each copy is one point in time.
    for (let i = 0; i < 4; i++) {
      const file = join(dir, `copy-${i}.db`);
      const r = await json(['backup', file, '--json']);
      expect(r).toMatchObject({ file, tasks: 40, integrity: 'ok', audit: { ok: true } });
      copies.push({ file, tasks: r.tasks });
    }
    await until(async () => (await json(['tasks', '--json', '--status', 'completed'])).tasks.length === 40, 240_000, 'all 40 tasks completed');
    const last = join(dir, 'copy-final.db');
    expect((await json(['backup', last, '--json'])).events).toBeGreaterThan(0);
    copies.push({ file: last, tasks: 40 });
    for (const c of copies) {
      expect(statSync(c.file).mode & 0o777).toBe(0o600);
      const db = new Database(c.file, { readonly: true });
      try {
        expect(db.pragma('quick_check', { simple: true })).toBe('ok');
        expect((db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n).toBe(c.tasks);
      } finally {
        db.close();
      }
    }
    // The last copy restores into a fresh home whose audit chain verifies and which shows every task completed.
    leader.kill('SIGTERM');
    const restored = join(dir, 'restored');
    mkdirSync(restored, { recursive: true, mode: 0o700 });
    copyFileSync(last, join(restored, 'lightworker.db'));
    const audit = await runCli(['audit', 'verify', '--json'], { home: restored });
    expect(audit.code, audit.stderr).toBe(0);
    expect(JSON.parse(audit.stdout)).toMatchObject({ ok: true });
    const listed = JSON.parse((await runCli(['tasks', '--json', '--status', 'completed'], { home: restored })).stdout) as { tasks: unknown[] };
    expect(listed.tasks).toHaveLength(40);
    // No partial files left beside the copies.
    expect(readdirSync(dir).filter((f) => f.includes('.partial'))).toEqual([]);
  });

  it('refuses an existing file without --force, a relative or missing folder, and an agent; changes nothing', async () => {
    const taken = join(dir, 'taken.db');
    writeFileSync(taken, 'mine');
    const r = await runCli(['backup', taken], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`file: ${taken} exists; pick another name or pass --force`);
    expect(statSync(taken).size).toBe(4);
    const missing = await runCli(['backup', join(dir, 'no', 'such', 'x.db')], { home });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
    const agent = await runCli(['backup', join(dir, 'agent.db')], { home, env: { LIGHTWORKER_DEPTH: '1' } });
    expect(agent.code).not.toBe(0);
    expect(agent.stderr).toContain('a backup of the store from a worker process');
    expect(existsSync(join(dir, 'agent.db'))).toBe(false);
    expect((await runCli(['backup', taken, '--force'], { home })).code).toBe(0);
    expect(statSync(taken).size).toBeGreaterThan(4);
  });
});
