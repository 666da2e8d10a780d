import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { START_HOOK_ENV } from '../../main/runner/permission-hook.js';
import { listRequests } from '../../main/store/requests.js';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { PERMISSION_COMMAND, permissionScript } from '../helpers/hitl-scripts.js';
import { runCli } from '../helpers/cli.js';
import { makeGatewayHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const KEY_ENV = 'LW_LATE_GATEWAY_KEY';
const T = 240_000;

/**
 * Claude Code `-p` does not wait for MCP servers by default: a permission server that is slow to start
 * (a loaded machine; here 5 s through the server's test hook) is not there when the model's first tool
 * call needs it, and Claude exits "MCP tool … (passed via --permission-prompt-tool) not found".
 */
describe('Claude Code with a permission server that takes 5 s to start (real CLI, scripted gateway)', () => {
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

  const run = (hook: string) => runCli(['run', '--until-idle'], { home: h.home, env: { [KEY_ENV]: 'sk-late-test-key-000000', [START_HOOK_ENV]: hook }, timeoutMs: T });
  async function submit(): Promise<string> {
    const r = await h.call('delegate_task', {
      objective: 'Create granted.txt with a node one-liner. [[script:perm]]', workspace: h.repo, kind: 'execute', mode: 'auto_execute',
      worker: 'claude-code', gateway: 'fake', model: 'claude-sonnet-4-5',
    });
    return r.task.id as string;
  }

  it('still asks a person (waiting_input), never fails the task, and the allowed command then runs', { timeout: T }, async (ctx) => {
    if (why) ctx.skip();
    const id = await submit();
    const first = await run('5000');
    expect(first.code, first.stderr).toBe(0);
    let t = getTask(h.engine.db, id)!;
    expect(t.status, `${t.status} ${JSON.stringify(t.error)}`).toBe('waiting_input');
    const [req] = listRequests(h.engine.db, { taskId: id });
    expect(req).toMatchObject({ kind: 'permission', status: 'pending', tool: 'Bash', command: PERMISSION_COMMAND });
    const answered = await runCli(['answer', id, '--allow'], { home: h.home });
    expect(answered.code, answered.stderr).toBe(0);
    const second = await run('5000');
    expect(second.code, second.stderr).toBe(0);
    t = getTask(h.engine.db, id)!;
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(readFileSync(join(t.worktreePath!, 'granted.txt'), 'utf8')).toBe('ok');
  });

  it('a permission server that cannot start fails the task with an error naming it', { timeout: T }, async (ctx) => {
    if (why) ctx.skip();
    const id = await submit();
    expect((await run('fail')).code).toBe(0);
    const t = getTask(h.engine.db, id)!;
    expect(t.status).toBe('failed');
    expect(t.error?.code).toBe('worker_failed');
    expect(t.error?.message).toContain(`LightWorker's permission server (lightworker mcp --permission-for ${id}) was not connected when Claude Code needed it`);
  });
});
