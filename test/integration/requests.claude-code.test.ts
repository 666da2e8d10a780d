import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../main/store/events.js';
import { listRequests } from '../../main/store/requests.js';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { PERMISSION_COMMAND, permissionScript } from '../helpers/hitl-scripts.js';
import { runCli } from '../helpers/cli.js';
import { makeGatewayHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const KEY_ENV = 'LW_HITL_GATEWAY_KEY';
const T = 240_000;
describe('Claude Code asks permission through LightWorker (real CLI, scripted gateway)', () => {
  let gw: Gateway;
  let h: TestHome;
  let why: string | null = null;
  beforeAll(async () => {
    why = await cliUnavailable('claude');
    gw = await startGateway({ keepBodies: true });
    gw.addScript('perm', permissionScript);
    h = makeGatewayHome(gw.url, KEY_ENV);
  });
  afterAll(async () => {
    h?.cleanup();
    await gw?.close();
  });

  const cli = (args: string[]) => runCli(args, { home: h.home, env: { [KEY_ENV]: 'sk-hitl-test-key-000000' }, timeoutMs: T });
  const task = (id: string) => getTask(h.engine.db, id)!;
  const sessions = (id: string) => listEvents(h.engine.db, { taskId: id, types: ['worker.started'] }).events.map((e) => e.payload.sessionId);
  async function runUntilIdle() {
    const r = await cli(['run', '--until-idle']);
    expect(r.code, r.stderr).toBe(0);
  }
  async function submitAndRun(kind: 'execute' | 'explore'): Promise<string> {
    const r = await h.call('delegate_task', {
      objective: 'Create granted.txt with a node one-liner. [[script:perm]]', workspace: h.repo, kind, mode: 'auto_execute',
      worker: 'claude-code', gateway: 'fake', model: 'claude-sonnet-4-5',
    });
    await runUntilIdle();
    return r.task.id as string;
  }
  async function askingTask() {
    const id = await submitAndRun('execute');
    const t = task(id);
    expect(t.status, `${t.status} ${JSON.stringify(t.error)}`).toBe('waiting_input');
    return id;
  }

  it('asks, is allowed from the CLI, resumes the same session and completes', { timeout: T }, async (ctx) => {
    if (why) ctx.skip();
    const id = await askingTask();
    const [req] = listRequests(h.engine.db, { taskId: id });
    expect(req).toMatchObject({ kind: 'permission', status: 'pending', tool: 'Bash', command: PERMISSION_COMMAND, attempt: 1 });
    // The request shows on every face: CLI, MCP (get_task), HTTP goes through the same table.
    expect((await cli(['requests'])).stdout).toContain(`Bash: ${PERMISSION_COMMAND}`);
    expect((await h.call('get_task', { id }, 'mcp')).task.needs).toMatchObject({ kind: 'permission', asks: `Bash: ${PERMISSION_COMMAND}` });
    const before = task(id).sessionId;
    expect(before).toBeTruthy();
    const answered = await cli(['answer', id, '--allow']);
    expect(answered.code, answered.stderr).toBe(0);
    await runUntilIdle();
    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(t.sessionId).toBe(before);
    expect(sessions(id)).toEqual([before, before]);
    expect(readFileSync(join(t.worktreePath!, 'granted.txt'), 'utf8')).toBe('ok');
    expect(t.result).toMatchObject({ summary: 'Ran the allowed command.' });
    console.info(`claude-code permission (CLI allow): task ${id} session before ${before} after ${t.sessionId}`);
  });

  it('asks, is denied, continues in the same session without the command and completes', { timeout: T }, async (ctx) => {
    if (why) ctx.skip();
    const id = await askingTask();
    const before = task(id).sessionId;
    const answered = await cli(['answer', id, '--deny', 'not', 'today']);
    expect(answered.code, answered.stderr).toBe(0);
    await runUntilIdle();
    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(sessions(id)).toEqual([before, before]);
    expect(existsSync(join(t.worktreePath!, 'granted.txt'))).toBe(false);
    expect(t.result).toMatchObject({ summary: 'Continued without the command.' });
    console.info(`claude-code permission (CLI deny): task ${id} session before ${before} after ${t.sessionId}`);
  });

  it('a read-only task (run in a disposable snapshot) whose request is denied resumes the same session in a new attempt', { timeout: T }, async (ctx) => {
    if (why) ctx.skip();
    const id = await submitAndRun('explore');
    let t = task(id);
    if (t.status === 'waiting_input') {
      expect((await cli(['answer', id, '--deny', 'read-only'])).code).toBe(0);
      await runUntilIdle();
      t = task(id);
    }
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    const seen = sessions(id);
    expect(seen.length).toBe(2);
    expect(seen[1]).toBe(seen[0]);
    expect(existsSync(join(h.repo, 'granted.txt'))).toBe(false);
  });
});
