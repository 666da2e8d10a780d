import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { followUpTask } from '../../main/tasks/followup.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { storedText } from '../helpers/store-dump.js';
import { hitlHarness } from './hitl.helpers.js';
import { taskCachelab } from '../../main/cachelab/task-cachelab.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(() => h.cleanup());

const gitLog = (dir: string, range: string) => execFileSync('git', ['log', '--format=%s', range], { cwd: dir, encoding: 'utf8' }).trim().split('\n').filter(Boolean);
/** Commits of a task branch beyond the user's main: the branch lives in the task's own repository until accept. */
const taskCommits = (t: { worktreePath: string | null; branch: string | null }) => gitLog(t.worktreePath!, `${execFileSync('git', ['rev-parse', 'main'], { cwd: h.repo, encoding: 'utf8' }).trim()}..${t.branch}`);

const { task, events, cli, lines, runUntilIdle } = hitlHarness(() => h);

/** A completed execute task whose first turn writes a.txt and whose follow-up turn writes b.txt. */
async function completedExecuteTask(promptLog: string) {
  const r = await h.call('delegate_task', {
    objective: 'write a file',
    workspace: h.repo,
    kind: 'execute',
    mode: 'auto_execute',
    metadata: { mock: { prompt_log: promptLog, write_files: { 'a.txt': 'one\n' }, followup: { write_files: { 'b.txt': 'two\n' } } } },
  });
  const id = r.task.id as string;
  await runUntilIdle();
  expect(task(id).status, JSON.stringify(task(id).error)).toBe('completed');
  return id;
}

describe('followup', () => {
  it('continues a completed execute task in its native session and worktree, adding a second commit on the task branch', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const id = await completedExecuteTask(log);
    const before = task(id);
    expect(taskCommits(before)).toHaveLength(1);

    const sent = await cli(['followup', id.slice(0, 10), 'please also write b.txt', '--json']);
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout).task).toMatchObject({ id, status: 'queued', attempt: 2, sessionId: before.sessionId });
    await runUntilIdle();

    const after = task(id);
    expect(after.status, JSON.stringify(after.error)).toBe('completed');
    expect(after.worktreePath).toBe(before.worktreePath);
    expect(after.sessionId).toBe(before.sessionId);
    // Two commits on the task branch: one per attempt.
    const commits = taskCommits(after);
    expect(commits).toHaveLength(2);
    expect(commits[0]).toMatch(/attempt 2/);
    expect(readFileSync(join(after.worktreePath!, 'a.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(join(after.worktreePath!, 'b.txt'), 'utf8')).toBe('two\n');
    // The second turn resumed the same session and its user message was the follow-up.
    const prompts = lines(log);
    expect(prompts).toHaveLength(2);
    expect(prompts[1]).toMatchObject({ session: prompts[0].session, resumed: true });
    expect(prompts[1].prompt).toContain('please also write b.txt');
    expect(events(id, 'task.resumed').at(-1)!.payload).toMatchObject({ mode: 'session', sessionId: before.sessionId, followUp: true, keptWorktree: true });
    expect(events(id, 'worktree.allocated')).toHaveLength(1);
  });

  it('hands the task to another worker: a fresh session whose prompt carries the previous attempt and the message', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const id = await completedExecuteTask(log);
    const script = join(h.root, 'other.mjs');
    const otherLog = join(h.root, 'other.jsonl');
    writeFileSync(
      script,
      `import { appendFileSync, writeFileSync } from 'node:fs';
const prompt = process.argv[2];
appendFileSync(${JSON.stringify(otherLog)}, JSON.stringify({ cwd: process.cwd(), prompt }) + '\\n');
writeFileSync('c.txt', 'three\\n');
console.log(JSON.stringify({ session_id: 'other-1' }));
console.log(JSON.stringify({ summary: 'wrote c.txt', files_changed: ['c.txt'], notes: null }));
`,
    );
    expect((await cli(['workers', 'link', 'other', '--command-json', JSON.stringify([process.execPath, script, '{prompt}'])])).code).toBe(0);
    const r = await cli(['followup', id, 'finish it with c.txt', '--worker', 'other']);
    expect(r.code, r.stderr).toBe(0);
    expect(task(id)).toMatchObject({ worker: 'other', attempt: 2, sessionId: null });
    await runUntilIdle();
    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    const [call] = lines(otherLog);
    expect(call.cwd).toBe(t.worktreePath);
    expect(call.prompt).toContain('Attempt 1 by mock ended completed');
    expect(call.prompt).toContain('finish it with c.txt');
    expect(events(id, 'task.resumed').at(-1)!.payload).toMatchObject({ mode: 'fresh', reason: expect.stringContaining('handed over from worker mock') });
    expect(taskCommits(t)).toHaveLength(2);
  });

  it('redacts a secret in the message everywhere it is stored, while the worker gets the real text', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const id = await completedExecuteTask(log);
    const secret = 'sk-proj-AbCdEf0123456789abcdefGHIJ';
    h.engine.write(() => followUpTask(h.engine.db, h.engine.config, id, { message: `use the key ${secret} for the call`, by: 'test', authority: 'person', cachelab: taskCachelab }));
    const event = JSON.stringify(events(id, 'task.status').at(-1)!.payload);
    expect(event).toContain('use the key');
    expect(event).not.toContain(secret);
    await runUntilIdle();
    expect(lines(log)[1].prompt).toContain(secret);
    const stored = storedText(h);
    expect(stored).toContain('use the key');
    expect(stored).not.toContain(secret);
  });

  it('refuses bad input and states it cannot continue, changing nothing', async () => {
    const r = await h.call('delegate_task', { objective: 'look', workspace: h.repo, kind: 'explore', mode: 'plan_only' });
    const id = r.task.id as string;
    const waiting = await cli(['followup', id, 'hello']);
    expect(waiting.code).toBe(1);
    expect(waiting.stderr).toMatch(/awaiting_approval; a follow-up goes to a completed, failed, timed_out, cancelled, rejected, waiting_input task \[illegal_transition\]/);
    const empty = await cli(['followup', id, ' ']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/message/);
    const unknown = await h.call('followup_task', { id, message: 'x', worker: 'nope' }).catch((e) => e);
    expect(unknown).toMatchObject({ code: 'invalid_input', details: { field: 'worker' } });
    expect(task(id)).toMatchObject({ status: 'awaiting_approval', attempt: 1 });
  });

  it('follow-ups do not spend the retry budget; retries do', async () => {
    h.configure('[scheduler]\nkill_grace_ms = 300\n[limits]\nretry_budget = 1\n');
    const r = await h.call('delegate_task', { objective: 'fail', workspace: h.repo, kind: 'explore', metadata: { mock: { fail_message: 'boom' } } });
    const id = r.task.id as string;
    await runUntilIdle();
    for (let i = 0; i < 2; i++) {
      expect(task(id).status).toBe('failed');
      expect((await cli(['followup', id, `try again ${i}`])).code).toBe(0);
      await runUntilIdle();
    }
    expect(task(id).attempt).toBe(3);
    expect((await cli(['retry', id])).code).toBe(0);
    await runUntilIdle();
    const refused = await cli(['retry', id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/retry budget of this task tree is used up \(1 of 1, limits.retry_budget\)/);
  });
});
