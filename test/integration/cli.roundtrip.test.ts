import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, tempDir } from '../helpers/env.js';
import { runCli } from '../helpers/cli.js';

let t: ReturnType<typeof tempDir>;
let home: string;
let repo: string;
beforeAll(() => {
  t = tempDir();
  home = join(t.dir, 'home');
  repo = makeRepo(join(t.dir, 'repo'));
});
afterAll(() => t.cleanup());

describe('lightworker CLI round trips', () => {
  it('run --until-idle with nothing to do exits 0 without claiming another process leads', async () => {
    const r = await runCli(['run', '--until-idle'], { home: join(t.dir, 'idle-home') });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/another process leads/);
  });

  it('init creates the home and is idempotent', async () => {
    const a = await runCli(['init', '--json'], { home });
    expect(a.code).toBe(0);
    expect(JSON.parse(a.stdout)).toMatchObject({ home, configWritten: true });
    const b = await runCli(['init', '--json'], { home });
    expect(JSON.parse(b.stdout).configWritten).toBe(false);
    const c = await runCli(['init', '--force', '--json'], { home });
    expect(JSON.parse(c.stdout).configWritten).toBe(true);
  });

  it('submit, tasks --json, show, approve, cancel, events, audit verify', async () => {
    const sub = await runCli(['submit', '-w', repo, '--kind', 'execute', '--json', 'add a feature'], { home });
    expect(sub.code).toBe(0);
    const id = JSON.parse(sub.stdout).task.id as string;
    expect(JSON.parse(sub.stdout).task.status).toBe('awaiting_approval');

    const list = await runCli(['tasks', '--json'], { home });
    expect(JSON.parse(list.stdout).tasks.map((x: { id: string }) => x.id)).toContain(id);

    const approved = await runCli(['approve', id], { home });
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain('queued');

    const cancelled = await runCli(['cancel', id, '--json'], { home });
    expect(JSON.parse(cancelled.stdout).tasks[0].status).toBe('cancelled');

    const show = await runCli(['show', id], { home });
    expect(show.stdout).toMatch(/cancelled/);
    expect(show.stdout).toMatch(/add a feature/);

    const events = await runCli(['events', '--task', id, '--json'], { home });
    const types = events.stdout.trim().split('\n').map((l) => JSON.parse(l).payload.to ?? JSON.parse(l).type);
    expect(types).toEqual(['task.created', 'queued', 'cancelled']);

    const audit = await runCli(['audit', 'verify', '--json'], { home });
    expect(JSON.parse(audit.stdout).ok).toBe(true);
  });

  it('uses exit code 2 for bad input and names the field; 1 for a failed operation', async () => {
    const bad = await runCli(['submit', '-w', '/', 'x'], { home });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/workspace/);
    const unknown = await runCli(['show', '01ARZ3NDEKTSV4RRFFQ69G5FAV'], { home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/not found/);
    const usage = await runCli(['submit', '--kind', 'deploy', 'x'], { home });
    expect(usage.code).toBe(2);
    const sub = await runCli(['submit', '-w', repo, '--json', 'read things'], { home });
    const id = JSON.parse(sub.stdout).task.id;
    await runCli(['cancel', id], { home });
    const again = await runCli(['cancel', id], { home });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/illegal_transition/);
  });

  it('doctor --json reports its checks', async () => {
    const r = await runCli(['doctor', '--json'], { home });
    const names = JSON.parse(r.stdout).checks.map((c: { name: string }) => c.name);
    expect(names).toEqual(expect.arrayContaining(['git', 'node', 'home', 'database', 'disk']));
  });

  it('npx-style --help works', async () => {
    const r = await runCli(['--help'], { home });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/submit/);
  });
});
