import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { makeHome, makeRepo, tempDir, type TestHome } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { git, newExecuteTask, simulateRun } from './isolation.helpers.js';

/** What a user hits in a working day with the CLI: follow, paging, id prefixes, errors, hints, prune. */
let t: ReturnType<typeof tempDir>;
let home: string;
let repo: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = tempDir('lw-workday-');
  home = join(t.dir, 'home');
  repo = makeRepo(join(t.dir, 'repo'));
  expect((await runCli(['init'], { home })).code).toBe(0);
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  t.cleanup();
});

function collect(child: ChildProcess): { stdout: () => string; stderr: () => string } {
  let out = '';
  let errText = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (errText += d.toString()));
  return { stdout: () => out, stderr: () => errText };
}

async function submitBatch(h: string, n: number, cwd: string): Promise<string[]> {
  const file = join(t.dir, `batch-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify({ tasks: Array.from({ length: n }, (_, i) => ({ objective: `task ${i}`, kind: 'explore', workspace: cwd })) }));
  const r = await runCli(['submit', '--batch', file, '--json'], { home: h });
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout).tasks as { id: string }[]).map((x) => x.id);
}

async function allSeqs(h: string): Promise<number[]> {
  const r = await runCli(['events', '--json', '--after', '0', '--limit', '5000'], { home: h });
  return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).seq as number);
}

describe('events', () => {
  it('--follow keeps running, prints events another process commits, and exits 0 on SIGTERM', async () => {
    const follower = startCli(['events', '--follow'], { home });
    children.push(follower);
    const io = collect(follower);
    // Before the fix the process ended with code 13 about a second in; give it well past that.
    await new Promise((r) => setTimeout(r, 3000));
    expect(follower.exitCode, io.stderr()).toBeNull();
    const sub = await runCli(['submit', '-w', repo, '--kind', 'explore', 'followed task'], { home });
    const id = sub.stdout.split(/\s+/)[0];
    await until(() => io.stdout().includes(id), 30_000, 'the follower to print the new task');
    expect(follower.exitCode).toBeNull();
    follower.kill('SIGTERM');
    expect(await exited(follower)).toBe(0);
    expect(io.stdout().match(new RegExp(`${id}\\s+task\\.created`, 'g'))).toHaveLength(1); // printed once
  });

  it('shows the newest events by default, says when more exist, and pages with --after/--before', async () => {
    await submitBatch(home, 6, repo);
    const seqs = await allSeqs(home);
    expect(seqs.length).toBeGreaterThan(4);
    const newest = await runCli(['events', '--json', '--limit', '3'], { home });
    expect(newest.code, newest.stderr).toBe(0);
    const shown = newest.stdout.trim().split('\n').map((l) => JSON.parse(l).seq as number);
    expect(shown).toEqual(seqs.slice(-3)); // newest at the bottom, like tail
    expect(newest.stderr).toContain(`--before ${shown[0]}`);

    const back = await runCli(['events', '--json', '--limit', '2', '--before', String(shown[0])], { home });
    expect(back.stdout.trim().split('\n').map((l) => JSON.parse(l).seq)).toEqual(seqs.slice(-5, -3));

    const first = await runCli(['events', '--json', '--after', '0', '--limit', '2'], { home });
    expect(first.stdout.trim().split('\n').map((l) => JSON.parse(l).seq)).toEqual(seqs.slice(0, 2));
    expect(first.stderr).toContain(`--after ${seqs[1]}`);

    const all = await runCli(['events', '--limit', '5000'], { home });
    expect(all.stderr).toBe(''); // nothing left out: no note

    const help = await runCli(['events', '--help'], { home });
    for (const flag of ['--limit', '--after', '--before', '--follow']) expect(help.stdout).toContain(flag);
  });
});

describe('task ids', () => {
  it('accepts a unique prefix (the 8 characters the UI shows) wherever the CLI takes a task id', async () => {
    const h2 = join(t.dir, 'home-prefix');
    const sub = await runCli(['submit', '-w', repo, '--kind', 'execute', '--json', 'prefixed'], { home: h2 });
    const id = JSON.parse(sub.stdout).task.id as string;
    const short = id.slice(0, 8);

    const show = await runCli(['show', short], { home: h2 });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout.split('\n')[0]).toMatch(new RegExp(`^${id}\\s+awaiting_approval`));
    expect((await runCli(['show', short.toLowerCase(), '--json'], { home: h2 })).stdout).toContain(id);
    expect((await runCli(['tree', short], { home: h2 })).stdout).toContain(id);
    expect((await runCli(['events', '--task', short, '--json'], { home: h2 })).stdout).toContain('task.created');
    const approved = await runCli(['approve', short], { home: h2 });
    expect(approved.stdout).toMatch(new RegExp(`^${id}\\s+queued`));
    expect((await runCli(['cancel', id.slice(0, 6)], { home: h2 })).stdout).toMatch(new RegExp(`^${id}\\s+cancelled`));
    const waited = await runCli(['wait', short, '--timeout', '0'], { home: h2 });
    expect(waited.stdout).toContain(`${id}  cancelled`);
    const retried = await runCli(['retry', short, '--json'], { home: h2 });
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout).task.id).toBe(id);
    const child = await runCli(['submit', '-w', repo, '--kind', 'explore', '--parent', short, '--depends-on', short, '--json', 'child'], { home: h2 });
    expect(child.code, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout).task).toMatchObject({ parentId: id, dependsOn: [id] });

    const unknown = await runCli(['show', 'ZZZZZZZZ'], { home: h2 });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/id: no task id starts with ZZZZZZZZ \[not_found\]/);
  });

  it('resolves prefixes in the command table, so MCP and the console get them too', async () => {
    const hm = makeHome();
    try {
      const { task } = await hm.call('delegate_task', { objective: 'x', workspace: hm.repo, kind: 'explore' }, 'mcp');
      const got = await hm.call('get_task', { id: task.id.slice(0, 8).toLowerCase() }, 'mcp');
      expect(got.task.id).toBe(task.id);
      const ev = await hm.call('get_events', { task_id: task.id.slice(0, 8) }, 'http');
      expect(ev.events.map((e: { taskId: string }) => e.taskId)).toContain(task.id);
      await expect(hm.call('cancel_task', { id: 'ZZZZZZ' }, 'mcp')).rejects.toMatchObject({ code: 'not_found', details: { field: 'id' } });
    } finally {
      hm.cleanup();
    }
  });

  it('refuses an ambiguous prefix, naming the candidates', async () => {
    const h3 = join(t.dir, 'home-ambiguous');
    const [a, b] = await submitBatch(h3, 2, repo);
    let n = 0;
    while (a[n] === b[n]) n++;
    expect(n).toBeGreaterThanOrEqual(6); // created in the same transaction: same timestamp part
    const r = await runCli(['show', a.slice(0, n)], { home: h3 });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is ambiguous');
    expect(r.stderr).toContain(a);
    expect(r.stderr).toContain(b);
    expect(r.stderr).toContain('[invalid_input]');
  });
});

describe('errors', () => {
  it('name the argument or flag the user gave, not the internal command', async () => {
    const bad = await runCli(['show', 'not-an-id'], { home });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: id: a task id/);
    expect(bad.stderr).not.toContain('get_task');
    const limit = await runCli(['events', '--limit', '0'], { home });
    expect(limit.code).toBe(2);
    expect(limit.stderr).toMatch(/^error: limit: /);
    expect(limit.stderr).not.toContain('get_events');
  });
});

describe('submit', () => {
  it('says how to start a scheduler when none runs, and not when one leads', async () => {
    const h4 = join(t.dir, 'home-submit');
    const idle = await runCli(['submit', '-w', repo, '--kind', 'explore', 'nobody runs me'], { home: h4 });
    expect(idle.code).toBe(0);
    expect(idle.stdout).toMatch(/^\w{26}\s+queued\n$/); // stdout stays one parsable line
    expect(idle.stderr).toContain('no scheduler is running; start one with `lightworker run`');

    const leader = startCli(['run', '--drain-timeout', '0'], { home: h4 });
    children.push(leader);
    await until(async () => JSON.parse((await runCli(['status', '--json'], { home: h4 })).stdout).leader !== null, 30_000, 'a leader');
    const led = await runCli(['submit', '-w', repo, '--kind', 'explore', 'someone runs me'], { home: h4 });
    expect(led.code).toBe(0);
    expect(led.stdout).toMatch(/queued|starting|running|completed/);
    expect(led.stderr).not.toContain('no scheduler');
    leader.kill('SIGTERM');
    await exited(leader);
  });
});

describe('prune and accepted task branches', () => {
  let h: TestHome;
  afterEach(() => h?.cleanup());

  it('lists the lightworker/<id> branches accept left, deletes merged ones with --apply, unmerged only with --force', async () => {
    h = makeHome();
    const merged = await newExecuteTask(h);
    await simulateRun(h, merged, (dir) => writeFileSync(join(dir, 'a.txt'), 'accepted work\n'));
    await h.call('accept_task', { id: merged.id });
    const moved = await newExecuteTask(h);
    await simulateRun(h, moved, (dir) => writeFileSync(join(dir, 'b.txt'), 'accepted too\n'));
    await h.call('accept_task', { id: moved.id });
    // Someone kept working on the second task's branch after accepting it: that work is on no other branch.
    git(h.repo, 'checkout', '-q', `lightworker/${moved.id}`);
    writeFileSync(join(h.repo, 'later.txt'), 'more\n');
    git(h.repo, 'add', 'later.txt');
    git(h.repo, 'commit', '-qm', 'later work');
    git(h.repo, 'checkout', '-q', 'main');

    const dry = await runCli(['prune'], { home: h.home });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(new RegExp(`would remove\\s+branch\\s+lightworker/${merged.id}\\s+task accepted; its changes are on main`));
    expect(dry.stdout).toMatch(new RegExp(`would keep\\s+branch\\s+lightworker/${moved.id}\\s+.*--force`));
    expect(git(h.repo, 'branch', '--list', `lightworker/${merged.id}`)).not.toBe(''); // dry run

    const applied = await runCli(['prune', '--apply', '--json'], { home: h.home });
    const items = JSON.parse(applied.stdout).items as { branch: string; action: string; done?: boolean }[];
    expect(items.find((i) => i.branch === `lightworker/${merged.id}`)).toMatchObject({ action: 'remove', done: true });
    expect(git(h.repo, 'branch', '--list', `lightworker/${merged.id}`)).toBe('');
    expect(git(h.repo, 'show', `lightworker/${moved.id}:later.txt`)).toBe('more'); // kept: unmerged

    const forced = await runCli(['prune', '--apply', '--force'], { home: h.home });
    expect(forced.code, forced.stderr).toBe(0);
    expect(git(h.repo, 'branch', '--list', `lightworker/${moved.id}`)).toBe('');
    expect((await runCli(['prune'], { home: h.home })).stdout.trim()).toBe('nothing to prune');
  });
});
