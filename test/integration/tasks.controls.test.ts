import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expireRequests } from '../../main/requests/requests.js';
import { pendingRequestOf } from '../../main/store/requests.js';
import { startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { hitlHarness } from './hitl.helpers.js';
import { exited, until } from '../helpers/procs.js';

let h: TestHome;
const children: ChildProcess[] = [];
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  h.cleanup();
});

const { task, events, cli, lines, runUntilIdle } = hitlHarness(() => h);
async function submit(mock: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await h.call('delegate_task', { objective: 'write a.txt', workspace: h.repo, kind: 'execute', mode: 'auto_execute', metadata: { mock }, ...extra });
  return r.task.id as string;
}

describe('pause / resume', () => {
  it('a paused queued task is not run until resumed', async () => {
    const id = await submit({ write_files: { 'a.txt': 'one\n' } });
    expect((await cli(['pause', id])).code).toBe(0);
    await runUntilIdle();
    expect(task(id).status).toBe('paused');
    expect((await cli(['resume', id])).code).toBe(0);
    expect(task(id).status).toBe('queued');
    await runUntilIdle();
    expect(task(id).status).toBe('completed');
  });

  it("a paused waiting task's request does not expire; resume moves its expiry by the pause", async () => {
    h.configure('[requests]\nexpiry_s = 1\n');
    const id = await submit({ result: { question: 'Which colour?' } });
    await runUntilIdle();
    expect(task(id).status).toBe('waiting_input');
    const before = pendingRequestOf(h.engine.db, id)!;
    expect((await cli(['pause', id])).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1200));
    expect(h.engine.write(() => expireRequests(h.engine.db, Date.now()))).toEqual([]);
    expect(task(id).status).toBe('paused');
    expect((await cli(['resume', id])).code).toBe(0);
    expect(task(id).status).toBe('waiting_input');
    expect(pendingRequestOf(h.engine.db, id)!.expiresAt).toBeGreaterThanOrEqual(before.expiresAt + 1000);
  });

  it('refuses to pause a running or ended task, naming its state', async () => {
    const id = await submit({});
    await runUntilIdle();
    const r = await cli(['pause', id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is completed; only a queued task or one waiting for an answer can be paused \[illegal_transition\]/);
  });
});

describe('reject', () => {
  it("rejects a completed change: dependents are blocked, accept is refused, the worktree stays, a follow-up may continue it", async () => {
    const id = await submit({ write_files: { 'a.txt': 'one\n' } });
    await runUntilIdle();
    const dep = (await h.call('delegate_task', { objective: 'after', workspace: h.repo, kind: 'explore', depends_on: [id], mode: 'plan_only' })).task.id as string;
    const r = await cli(['reject', id, '--reason', 'wrong file']);
    expect(r.code, r.stderr).toBe(0);
    expect(task(id)).toMatchObject({ status: 'rejected', error: { code: 'rejected', message: 'rejected by the CLI: wrong file' } });
    expect(task(dep).status).toBe('blocked');
    expect(existsSync(task(id).worktreePath!)).toBe(true);
    expect((await cli(['accept', id])).code).not.toBe(0);
    expect((await cli(['followup', id, 'use b.txt instead'])).code).toBe(0);
    expect(task(id).status).toBe('queued');
  });
});

describe('reverify', () => {
  it('reruns only the verify commands in the same worktree: passes, then fails once the worktree changed', async () => {
    const id = await submit({ write_files: { 'a.txt': 'one\n' } }, { verify: [['grep', '-q', 'one', 'a.txt']] });
    await runUntilIdle();
    const first = task(id);
    expect(first.status).toBe('completed');
    expect((await cli(['reverify', id])).code).toBe(0);
    await runUntilIdle();
    expect(task(id)).toMatchObject({ status: 'completed', attempt: 2, result: first.result });
    expect(events(id, 'worker.started')).toHaveLength(1);
    expect(events(id, 'verify.completed')).toHaveLength(2);

    writeFileSync(join(first.worktreePath!, 'a.txt'), 'two\n');
    expect((await cli(['reverify', id])).code).toBe(0);
    await runUntilIdle();
    expect(task(id)).toMatchObject({ status: 'failed', attempt: 3, error: { code: 'verification_failed' } });
    expect(events(id, 'worker.started')).toHaveLength(1);
  });

  it('refuses a task without verify commands, naming the field', async () => {
    const id = await submit({});
    await runUntilIdle();
    const r = await cli(['reverify', id]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/id: task .* has no verify commands to rerun/);
  });
});

describe('redirect', () => {
  it('a running task gets the new objective at its next turn, in the same session', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const id = await submit({ prompt_log: log, sleep_ms: 2500, followup: { sleep_ms: 0, write_files: { 'b.txt': 'redirected\n' } } });
    const leader = startCli(['run', '--until-idle'], { home: h.home });
    children.push(leader);
    await until(() => task(id).status === 'running', 30_000, 'the task to run');
    const r = await cli(['redirect', id, 'write', 'b.txt', 'instead']);
    expect(r.code, r.stderr).toBe(0);
    expect(task(id).objective).toBe('write b.txt instead');
    await exited(leader);
    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    const prompts = lines(log);
    expect(prompts).toHaveLength(2);
    expect(prompts[1]).toMatchObject({ session: prompts[0].session, resumed: true });
    expect(prompts[1].prompt).toContain('# New objective\nwrite b.txt instead');
    expect(existsSync(join(t.worktreePath!, 'b.txt'))).toBe(true);
    expect(events(id, 'task.redirect_applied')).toHaveLength(1);
  });
});
