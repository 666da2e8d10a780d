import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { releaseWorkspace } from '../../main/isolation/workspace.js';
import { SAME_SIGNAL_MS } from '../../main/scheduler/shutdown.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { captureStderr, exited, until } from '../helpers/procs.js';

let h: TestHome;
const children: ChildProcess[] = [];
beforeEach(() => {
  h = makeHome();
  // Orphans here wait for the explicit resume these tests make (auto-resume: lifecycle.takeover.test.ts).
  h.configure('[scheduler]\nkill_grace_ms = 300\nlease_ttl_ms = 1000\nauto_resume_orphans = false\n');
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  h.cleanup();
});

const task = (id: string) => getTask(h.engine.db, id)!;
const events = (id: string, type: string) => listEvents(h.engine.db, { taskId: id, types: [type] }).events;

function cli(args: string[], opts: { timeoutMs?: number } = {}) {
  return runCli(args, { home: h.home, timeoutMs: opts.timeoutMs });
}

async function runUntilIdle(): Promise<void> {
  const r = await cli(['run', '--until-idle'], { timeoutMs: 60_000 });
  expect(r.code, r.stderr).toBe(0);
}

/** Stop a leading `run` the way a person does: Ctrl-C, then Ctrl-C again. */
async function shutDownTwice(child: ChildProcess, stderr: () => string): Promise<void> {
  child.kill('SIGINT');
  await until(() => /Ctrl-C again to cancel/.test(stderr()), 10_000, 'the shutdown message');
  await new Promise((r) => setTimeout(r, SAME_SIGNAL_MS + 200));
  child.kill('SIGINT');
  await exited(child);
}

/**
 * An execute task whose first attempt writes first.txt and then works for a minute (its resumed turn
 * writes second.txt and finishes), running under a `run` leader.
 */
async function startWritingTask() {
  const r = await h.call('delegate_task', {
    objective: 'write two files',
    workspace: h.repo,
    kind: 'execute',
    mode: 'auto_execute',
    metadata: { mock: { write_files: { 'first.txt': 'attempt one\n' }, sleep_ms: 60_000, followup: { sleep_ms: 0, write_files: { 'second.txt': 'resumed\n' } } } },
  });
  const id = r.task.id as string;
  const child = startCli(['run'], { home: h.home });
  children.push(child);
  const stderr = captureStderr(child);
  // The worker writes its file as the runner records its session from its output: wait for both.
  await until(() => task(id).status === 'running' && !!task(id).sessionId && !!task(id).worktreePath && existsSync(join(task(id).worktreePath!, 'first.txt')), 30_000, 'the first attempt to write');
  return { id, child, stderr };
}

/**
 * A linked agent CLI that records each call (mode, session, cwd, whether the earlier work is there) and
 * behaves like an agent that works for a long time on its first turn and finishes on a later one.
 */
function writeRecorder(): { script: string; log: string } {
  const script = join(h.root, 'recorder.mjs');
  const log = join(h.root, 'calls.jsonl');
  writeFileSync(
    script,
    `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const [mode, session, prompt] = process.argv.slice(2);
const hadWork = existsSync('work.txt');
appendFileSync(${JSON.stringify(log)}, JSON.stringify({ mode, session, cwd: process.cwd(), hadWork, prompt }) + '\\n');
const sid = mode === 'resume' ? session : 'sess-' + process.pid;
console.log(JSON.stringify({ session_id: sid }));
if (!hadWork) {
  writeFileSync('work.txt', 'from the first attempt\\n');
  setTimeout(() => {}, 120000);
} else {
  writeFileSync('more.txt', 'from the resumed attempt\\n');
  console.log(JSON.stringify({ summary: 'done', files_changed: ['work.txt', 'more.txt'], notes: null }));
}
`,
  );
  return { script, log };
}
const calls = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

describe('retry --strategy resume', () => {
  it('continues a task stopped by a shutdown in its native session and the same worktree', async () => {
    const { id, child, stderr } = await startWritingTask();
    const session = task(id).sessionId;
    const worktree = task(id).worktreePath!;
    expect(session).toBeTruthy();
    await shutDownTwice(child, stderr);
    expect(task(id).status).toBe('cancelled');
    expect(task(id).error?.code).toBe('shutdown');

    const retried = await cli(['retry', id, '--strategy', 'resume', '--json']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout).task).toMatchObject({ status: 'queued', attempt: 2 });
    await runUntilIdle();

    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(t.worktreePath).toBe(worktree);
    const resumed = events(id, 'task.resumed');
    expect(resumed).toHaveLength(1);
    expect(resumed[0].payload).toMatchObject({ mode: 'session', sessionId: session, fromAttempt: 1, interruptedBy: 'shutdown', keptWorktree: true });
    // The mock continues the session it is given (--resume): the second attempt reports the same one.
    expect(events(id, 'worker.started').map((e) => e.payload.sessionId)).toEqual([session, session]);
    // The first attempt's file is still there, next to the resumed attempt's; both are the task's changes.
    expect(readFileSync(join(worktree, 'first.txt'), 'utf8')).toBe('attempt one\n');
    expect(readFileSync(join(worktree, 'second.txt'), 'utf8')).toBe('resumed\n');
    const changes = events(id, 'task.changes').at(-1)!.payload;
    expect(changes.changedFiles).toEqual(expect.arrayContaining(['first.txt', 'second.txt']));
    expect(events(id, 'worktree.kept')).toHaveLength(1);
    expect(events(id, 'worktree.allocated')).toHaveLength(1);
  });

  it('re-attaches the worktree from its branch when the folder was removed meanwhile', async () => {
    const { id, child, stderr } = await startWritingTask();
    const worktree = task(id).worktreePath!;
    await shutDownTwice(child, stderr);
    // As prune would: the folder goes (its uncommitted work is committed to the branch first).
    await releaseWorkspace(h.engine, id, 'test: removed before the resume');
    expect(existsSync(worktree)).toBe(false);
    expect((await cli(['retry', id, '--strategy', 'resume'])).code).toBe(0);
    await runUntilIdle();
    expect(task(id).status, JSON.stringify(task(id).error)).toBe('completed');
    expect(events(id, 'worktree.kept')[0].payload).toMatchObject({ path: worktree, reattached: true });
    expect(readFileSync(join(worktree, 'first.txt'), 'utf8')).toBe('attempt one\n');
    expect(readFileSync(join(worktree, 'second.txt'), 'utf8')).toBe('resumed\n');
    expect(events(id, 'task.changes').at(-1)!.payload.changedFiles).toEqual(expect.arrayContaining(['first.txt', 'second.txt']));
  });

  it('continues a task orphaned by kill -9 of its leader: the resume template gets the session, in the same worktree', async () => {
    const { script, log } = writeRecorder();
    const link = await cli(['workers', 'link', 'recorder', '--command-json', JSON.stringify([process.execPath, script, 'fresh', '{session}', '{prompt}']), '--resume-json', JSON.stringify([process.execPath, script, 'resume', '{session}', '{prompt}'])]);
    expect(link.code, link.stderr).toBe(0);
    const r = await h.call('delegate_task', { objective: 'long work', workspace: h.repo, kind: 'execute', mode: 'auto_execute', worker: 'recorder' });
    const id = r.task.id as string;
    const leader = startCli(['run'], { home: h.home });
    children.push(leader);
    await until(() => calls(log).length === 1 && task(id).status === 'running' && !!task(id).sessionId, 30_000, 'the first turn');
    const first = calls(log)[0];
    leader.kill('SIGKILL');
    await exited(leader);
    // A new leader takes over and orphans the task (killing what is left of its tree).
    await runUntilIdle();
    expect(task(id).status).toBe('orphaned');

    const retried = await cli(['retry', id, '--strategy', 'resume']);
    expect(retried.code, retried.stderr).toBe(0);
    await runUntilIdle();
    expect(task(id).status, JSON.stringify(task(id).error)).toBe('completed');
    const second = calls(log)[1];
    expect(first).toMatchObject({ mode: 'fresh', hadWork: false });
    expect(second).toMatchObject({ mode: 'resume', cwd: first.cwd, hadWork: true });
    // The session the first turn reported is the one the resume template was given.
    expect(second.session).toMatch(/^sess-\d+$/);
    expect(second.session).toBe(events(id, 'worker.started')[0].payload.sessionId);
    expect(second.prompt).toMatch(/interrupted/);
    expect(events(id, 'task.resumed')[0].payload).toMatchObject({ mode: 'session', interruptedBy: 'orphaned', keptWorktree: true });
  });

  it('starts fresh, in the same worktree, and says so when the worker has no sessions', async () => {
    const { script, log } = writeRecorder();
    const link = await cli(['workers', 'link', 'oneshot', '--command-json', JSON.stringify([process.execPath, script, 'fresh', '{session}', '{prompt}'])]);
    expect(link.code, link.stderr).toBe(0);
    const r = await h.call('delegate_task', { objective: 'long work', workspace: h.repo, kind: 'execute', mode: 'auto_execute', worker: 'oneshot', timeout_s: 3 });
    const id = r.task.id as string;
    await runUntilIdle();
    expect(task(id).status).toBe('timed_out');
    const retried = await cli(['retry', id, '--strategy', 'resume']);
    expect(retried.code, retried.stderr).toBe(0);
    await runUntilIdle();
    expect(task(id).status, JSON.stringify(task(id).error)).toBe('completed');
    const [first, second] = calls(log);
    expect(second).toMatchObject({ mode: 'fresh', cwd: first.cwd, hadWork: true });
    expect(second.prompt).toMatch(/An earlier attempt of this task was interrupted/);
    const ev = events(id, 'task.resumed')[0].payload;
    expect(ev).toMatchObject({ mode: 'fresh', interruptedBy: 'timed_out', keptWorktree: true });
    expect(String(ev.reason)).toMatch(/oneshot cannot continue a session/);
  });

  it('refuses resume for a run that was not interrupted, naming the field, and changes nothing', async () => {
    const r = await h.call('delegate_task', { objective: 'fails', workspace: h.repo, kind: 'explore', metadata: { mock: { fail_message: 'boom' } } });
    const id = r.task.id as string;
    await runUntilIdle();
    expect(task(id).status).toBe('failed');
    const refused = await cli(['retry', id, '--strategy', 'resume']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/strategy: resume continues a run that was interrupted/);
    // The same answer through the command table as MCP's retry_task calls it.
    await expect(h.call('retry_task', { id, strategy: 'resume' }, 'mcp')).rejects.toMatchObject({ code: 'invalid_input', details: { field: 'strategy' } });
    expect(task(id)).toMatchObject({ status: 'failed', attempt: 1 });
  });
});
