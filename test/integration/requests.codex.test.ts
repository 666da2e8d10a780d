import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../main/core/config.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { QUESTION, questionScript } from '../helpers/hitl-scripts.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const KEY_ENV = 'LW_HITL_CODEX_KEY';
const T = 240_000;
describe('Codex (and OpenCode) ask a question through the escalation protocol (real CLIs, scripted gateway)', () => {
  let gw: Gateway;
  let h: TestHome;
  let why: string | null = null;
  beforeAll(async () => {
    why = await cliUnavailable('codex');
    gw = await startGateway({ keepBodies: true });
    gw.addScript('question', questionScript);
    h = makeHome({ config: parseConfig({ gateways: { fake: { base_url: `${gw.url}/v1`, key_env: KEY_ENV } } }) });
    h.configure(`[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n`);
  });
  afterAll(async () => {
    h?.cleanup();
    await gw?.close();
  });
  const cli = (args: string[]) => runCli(args, { home: h.home, env: { [KEY_ENV]: 'sk-hitl-codex-key-000000' }, timeoutMs: T });

  it('returns a question, `answer` resumes its session, and the task completes with the answer in its context', { timeout: T }, async (ctx) => {
    if (why) ctx.skip();
    const r = await h.call('delegate_task', {
      objective: 'Summarize README.md. [[script:question]]', workspace: h.repo, kind: 'explore', worker: 'codex', gateway: 'fake', model: 'gpt-5.5',
    });
    const id = r.task.id as string;
    expect((await cli(['run', '--until-idle'])).code).toBe(0);
    const waiting = getTask(h.engine.db, id)!;
    expect(waiting.status, JSON.stringify(waiting.error)).toBe('waiting_input');
    const before = waiting.sessionId;
    expect(before).toBeTruthy();
    const w = await cli(['wait', id, '--json']);
    expect(JSON.parse(w.stdout)).toMatchObject({ reason: 'needs_input', tasks: [{ id, needs: { kind: 'question', asks: QUESTION } }] });

    const a = await cli(['answer', id, 'French']);
    expect(a.code, a.stderr).toBe(0);
    expect((await cli(['run', '--until-idle'])).code).toBe(0);
    const t = getTask(h.engine.db, id)!;
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(t.result).toEqual({ summary: 'Answered in French.', findings: ['the person said: French'] });
    const sessions = listEvents(h.engine.db, { taskId: id, types: ['worker.started'] }).events.map((e) => e.payload.sessionId);
    expect(sessions).toEqual([before, before]);
    expect(t.sessionId).toBe(before);
    // The resumed turn was `codex exec resume <thread>` in the first turn's CODEX_HOME.
    const resumed = gw.requests.filter((q) => q.summary?.script === 'question' && !q.summary.side);
    expect(resumed.length).toBeGreaterThanOrEqual(2);
    console.info(`codex question (CLI answer): task ${id} session before ${before} after ${t.sessionId}`);
  });

  it('OpenCode: the same question through the escalation protocol, answered, continues its session', { timeout: T }, async (ctx) => {
    if (await cliUnavailable('opencode')) ctx.skip();
    h.configure(`[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n[models]\nallow = ["fake-model"]\n`);
    const r = await h.call('delegate_task', { objective: 'Summarize README.md. [[script:question]]', workspace: h.repo, kind: 'explore', worker: 'opencode', gateway: 'fake', model: 'fake-model' });
    const id = r.task.id as string;
    expect((await cli(['run', '--until-idle'])).code).toBe(0);
    const waiting = getTask(h.engine.db, id)!;
    expect(waiting.status, JSON.stringify(waiting.error)).toBe('waiting_input');
    expect((await cli(['answer', id, 'English'])).code).toBe(0);
    expect((await cli(['run', '--until-idle'])).code).toBe(0);
    const t = getTask(h.engine.db, id)!;
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(t.result).toEqual({ summary: 'Answered in English.', findings: ['the person said: English'] });
    const sessions = listEvents(h.engine.db, { taskId: id, types: ['worker.started'] }).events.map((e) => e.payload.sessionId);
    expect(sessions).toEqual([waiting.sessionId, waiting.sessionId]);
    console.info(`opencode question (CLI answer): task ${id} session before ${waiting.sessionId} after ${t.sessionId}`);
  });
});
