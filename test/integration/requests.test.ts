import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listRequests, pendingRequestOf } from '../../main/store/requests.js';
import { enterWaiting, expireRequests, openRequest } from '../../main/requests/requests.js';
import { transition } from '../../main/tasks/state.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { hitlHarness } from './hitl.helpers.js';
import { until } from '../helpers/procs.js';

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});


const { task, events, cli, lines, runUntilIdle } = hitlHarness(() => h);

/** An execute task whose first turn ends with `ask` as its final answer and whose answered turn finishes. */
async function asking(ask: unknown, extra: Record<string, unknown> = {}) {
  const log = join(h.root, 'prompts.jsonl');
  const r = await h.call('delegate_task', {
    objective: 'change the greeting',
    workspace: h.repo,
    kind: 'execute',
    mode: 'auto_execute',
    ...extra,
    metadata: { mock: { prompt_log: log, write_files: { 'a.txt': 'one\n' }, result: ask, followup: { write_files: { 'b.txt': 'two\n' }, result: { summary: 'done', files_changed: ['b.txt'], notes: null } } } },
  });
  return { id: r.task.id as string, log };
}

describe('questions and permission requests (escalation protocol)', () => {
  it('a question ends the turn in waiting_input; wait says what it needs; answer resumes the same session, in the same worktree', async () => {
    const { id, log } = await asking({ summary: 'need a decision', files_changed: [], notes: null, escalation: { type: 'question', text: 'Greeting in English or French?', options: ['English', 'French'], command: null, scope: null, reason: 'the objective does not say' } });
    await runUntilIdle();
    const waiting = task(id);
    expect(waiting.status).toBe('waiting_input');
    expect(waiting.pid).toBeNull();
    const w = await waitTasks(h.engine, [id], 1000);
    expect(w.reason).toBe('needs_input');
    expect(w.tasks[0]).toMatchObject({ id, status: 'waiting_input', needs: { kind: 'question', asks: 'Greeting in English or French?', options: ['English', 'French'] } });
    const shown = await cli(['show', id]);
    expect(shown.stdout).toMatch(/needs: +question — Greeting in English or French\?/);
    const listed = await cli(['requests']);
    expect(listed.stdout).toContain('Greeting in English or French?');
    expect(listed.stdout).toContain(`lightworker answer ${id} "…"`);

    const bad = await cli(['answer', id, '--allow']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/decision: .*this is a question/);
    const ok = await cli(['answer', id, 'French,', 'please']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(task(id)).toMatchObject({ status: 'queued', attempt: 2, sessionId: waiting.sessionId });
    await runUntilIdle();

    const done = task(id);
    expect(done.status, JSON.stringify(done.error)).toBe('completed');
    expect(done.worktreePath).toBe(waiting.worktreePath);
    const prompts = lines(log);
    expect(prompts[1]).toMatchObject({ session: prompts[0].session, resumed: true });
    expect(prompts[1].prompt).toContain('You asked: Greeting in English or French?');
    expect(prompts[1].prompt).toContain('French, please');
    const [req] = listRequests(h.engine.db, { status: ['answered'] });
    expect(req).toMatchObject({ taskId: id, kind: 'question', decision: 'answer', answer: 'French, please', answeredBy: 'the CLI', attempt: 1 });
    expect(events(id, 'request.created')).toHaveLength(1);
    expect(events(id, 'request.answered')).toHaveLength(1);
    expect(readFileSync(join(done.worktreePath!, 'a.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(join(done.worktreePath!, 'b.txt'), 'utf8')).toBe('two\n');
  });

  it('a permission request is granted only by a person unless approvals.allow_mcp, and a denial is sent into the session', async () => {
    const { id, log } = await asking({ permission_request: { command: 'curl https://example.com/schema.json', scope: 'network', reason: 'the schema lives online' } });
    await runUntilIdle();
    expect(task(id).status).toBe('waiting_input');
    const overMcp = await h.call('answer_task', { id, decision: 'allow' }, 'mcp').catch((e) => e);
    expect(overMcp).toMatchObject({ code: 'forbidden' });
    expect(task(id).status).toBe('waiting_input');
    const r = await h.call('answer_task', { id, decision: 'deny', text: 'no network from tasks' }, 'mcp');
    expect(r.request).toMatchObject({ decision: 'deny', answeredBy: 'an MCP client' });
    await runUntilIdle();
    expect(task(id).status, JSON.stringify(task(id).error)).toBe('completed');
    const second = lines(log)[1].prompt as string;
    expect(second).toContain('A person denied your request to use command `curl https://example.com/schema.json`');
    expect(second).toContain('no network from tasks');
  });

  it('the policy denies a request outside the boundary at once and the worker continues in its session', async () => {
    const { id, log } = await asking({ permission_request: { command: 'git push origin main', scope: 'remote', reason: 'ship it' } });
    await runUntilIdle();
    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(listRequests(h.engine.db, { status: ['pending'] })).toHaveLength(0);
    expect(events(id, 'request.denied')[0].payload).toMatchObject({ by: 'policy', reason: expect.stringContaining('never pushes') });
    expect(lines(log)[1].prompt).toContain('LightWorker denied your permission request');
    expect(t.attempt).toBe(1);
  });

  it('config [requests] can deny questions for a kind', async () => {
    h.configure('[requests.kinds.execute]\nquestion = "deny"\n');
    const { id } = await asking({ question: 'Which colour?' });
    await runUntilIdle();
    expect(task(id).status).toBe('completed');
    expect(events(id, 'request.denied')[0].payload.reason).toMatch(/requests\.kinds\.execute\] question = "deny"/);
  });

  it('a request nobody answers expires: the task fails with a clear error, dependents are blocked', async () => {
    h.configure('[scheduler]\nkill_grace_ms = 300\nlease_ttl_ms = 600\n[requests]\nexpiry_s = 1\n');
    const { id } = await asking({ question: 'Which colour?' });
    const dep = (await h.call('delegate_task', { objective: 'after', workspace: h.repo, kind: 'explore', depends_on: [id] })).task.id as string;
    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, [id], 30_000);
    expect(r.reason).toBe('needs_input');
    await until(() => task(id).status === 'failed', 30_000, 'the request to expire');
    expect((await waitTasks(h.engine, [id, dep], 1000)).reason).toBe('settled');
    const t = task(id);
    expect(t.status).toBe('failed');
    expect(t.error?.code).toBe('request_expired');
    expect(t.error?.message).toMatch(/the question "Which colour\?" expired after \d+ s without an answer \(config.toml \[requests\] expiry_s\)/);
    expect(task(dep).status).toBe('blocked');
    expect(listRequests(h.engine.db, { status: ['expired'] })).toHaveLength(1);
  });

  it('cancel ends a waiting task at once and closes its request; answering a task that waits for nothing is refused', async () => {
    const { id } = await asking({ question: 'Which colour?' });
    await runUntilIdle();
    expect((await cli(['cancel', id])).code).toBe(0);
    expect(task(id).status).toBe('cancelled');
    expect(listRequests(h.engine.db, { status: ['cancelled'] })).toHaveLength(1);
    const r = await cli(['answer', id, 'blue']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no question or permission request waiting for an answer \[illegal_transition\]/);
  });

  it('a follow-up to a waiting task takes the place of the answer: the request is closed as superseded', async () => {
    const { id, log } = await asking({ question: 'Which colour?' });
    await runUntilIdle();
    expect((await cli(['followup', id, 'never mind the colour, just write b.txt'])).code).toBe(0);
    expect(listRequests(h.engine.db, { status: ['cancelled'] })[0]).toMatchObject({ taskId: id, answer: 'superseded by a follow-up' });
    await runUntilIdle();
    expect(task(id).status).toBe('completed');
    expect(lines(log)[1].prompt).toContain('never mind the colour, just write b.txt');
  });
});

describe('request expiry and the turn that asked', () => {
  it('a request does not expire while the turn that asked is still ending; once the task waits it does', async () => {
    h.configure('[requests]\nexpiry_s = 1\n');
    const id = (await h.call('delegate_task', { objective: 'x', workspace: h.repo, kind: 'explore' })).task.id as string;
    const db = h.engine.db;
    const req = h.engine.write(() => {
      transition(db, id, 'queued', 'starting');
      const t = transition(db, id, 'starting', 'running');
      return openRequest(db, h.engine.config, t, { kind: 'question', question: 'still there?' });
    });
    const later = req.expiresAt + 1;
    expect(h.engine.write(() => expireRequests(db, later))).toEqual([]);
    expect(pendingRequestOf(db, id)?.id).toBe(req.id);
    h.engine.write(() => enterWaiting(db, id, req));
    expect(h.engine.write(() => expireRequests(db, later))).toEqual([id]);
    expect(task(id)).toMatchObject({ status: 'failed', error: { code: 'request_expired' } });
  });
});

describe('timeouts pause while a task waits', () => {
  /** A task (timeout `timeoutS`) whose turns each work `turnMs`; the first asks, and a person answers after `waitMs`. */
  async function run(turnMs: number, waitMs: number, timeoutS = 4) {
    const r = await h.call('delegate_task', {
      objective: 'slow', workspace: h.repo, kind: 'execute', mode: 'auto_execute', timeout_s: timeoutS,
      metadata: { mock: { sleep_ms: turnMs, result: { question: 'go on?' }, followup: { sleep_ms: turnMs, result: { summary: 'done', files_changed: [], notes: null } } } },
    });
    const id = r.task.id as string;
    await runUntilIdle();
    expect(task(id).status).toBe('waiting_input');
    await new Promise((res) => setTimeout(res, waitMs));
    expect((await cli(['answer', id, 'yes'])).code).toBe(0);
    await runUntilIdle();
    return task(id);
  }

  it('the waiting time does not count', async () => {
    const t = await run(300, 5000);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
  });

  it('the run time before the question does: the continued attempt gets only what is left', async () => {
    // The first turn leaves 4 s (room for a slow start on a loaded machine); the second needs 6.
    const t = await run(6000, 0, 10);
    expect(t.status).toBe('timed_out');
    expect(t.attempt).toBe(2);
  });
});
