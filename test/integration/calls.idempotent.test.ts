import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { runCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
import { inMemory, type McpHarness } from './mcp.helpers.js';

/**
 * A host agent that retries a creating call after a dropped connection must not get its tasks twice: the
 * same client_request_id returns the first call's tasks (replayed), a different input under that id is
 * refused naming the field, and nothing is created either way.
 */
describe('client_request_id makes creating calls safe to retry', () => {
  let h: McpHarness;
  const count = () => (h.engine.db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n;

  beforeAll(async () => {
    h = await inMemory();
  });
  afterAll(() => h?.close());

  it('delegate_task: the same id and input returns the first task, flagged; another input or command under it is refused', async () => {
    const args = { objective: 'look around', workspace: h.repo, worker: 'mock', client_request_id: 'req-0001-delegate' };
    const first = await h.call('delegate_task', args);
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent.replayed).toBeUndefined();
    const again = await h.call('delegate_task', args);
    expect(again.isError).toBeFalsy();
    expect(again.structuredContent).toMatchObject({ replayed: true, task: { id: first.structuredContent.task.id } });
    expect(count()).toBe(1);

    const changed = await h.call('delegate_task', { ...args, objective: 'something else' });
    expect(changed.isError).toBe(true);
    expect(JSON.parse(changed.content[0].text).message).toContain('client_request_id: "req-0001-delegate" was used with a different objective');
    const batch = await h.call('delegate_batch', { tasks: [{ objective: 'look around', workspace: h.repo, worker: 'mock' }], client_request_id: 'req-0001-delegate' });
    expect(batch.isError).toBe(true);
    expect(JSON.parse(batch.content[0].text).message).toContain('was used for delegate_task, not delegate_batch');
    expect(count()).toBe(1);
  });

  it('delegate_batch names the changed field inside the batch; orchestrate_goal and start_team replay their whole tree', async () => {
    const tasks = [
      { ref: 'a', objective: 'one', workspace: h.repo, worker: 'mock' },
      { ref: 'b', objective: 'two', workspace: h.repo, worker: 'mock', depends_on: ['a'] },
    ];
    const before = count();
    const first = await h.call('delegate_batch', { tasks, client_request_id: 'req-0002-batch' });
    const again = await h.call('delegate_batch', { tasks, client_request_id: 'req-0002-batch' });
    expect(again.structuredContent.replayed).toBe(true);
    expect(again.structuredContent.tasks.map((t: { id: string }) => t.id)).toEqual(first.structuredContent.tasks.map((t: { id: string }) => t.id));
    const moved = await h.call('delegate_batch', { tasks: [tasks[0], { ...tasks[1], priority: 90 }], client_request_id: 'req-0002-batch' });
    expect(moved.isError).toBe(true);
    expect(JSON.parse(moved.content[0].text).message).toContain('was used with a different tasks[1].priority');
    expect(count()).toBe(before + 2);

    const goal = { goal: 'split this', workspace: h.repo, worker: 'mock', client_request_id: 'req-0003-goal' };
    const plan = await h.call('orchestrate_goal', goal);
    expect((await h.call('orchestrate_goal', goal)).structuredContent).toMatchObject({ replayed: true, task: { id: plan.structuredContent.task.id } });
    expect(count()).toBe(before + 3);

    const team = { strategy: 'best_of_n', workers: ['mock', 'codex'], objective: 'try twice', workspace: h.repo, client_request_id: 'req-0004-team' };
    const started = await runCommand(COMMANDS, { engine: h.engine, face: 'cli', depth: 0 }, 'start_team', team);
    const replay = await runCommand(COMMANDS, { engine: h.engine, face: 'cli', depth: 0 }, 'start_team', team);
    expect(replay).toMatchObject({ replayed: true, rootId: (started as { rootId: string }).rootId });
    expect(count()).toBe(before + 3 + (started as { tasks: unknown[] }).tasks.length);
  });
});

describe('submit --request-id, five at once', () => {
  let dir: string;
  let cleanup: () => void;
  let home: string;
  let repo: string;
  beforeAll(() => {
    ({ dir, cleanup } = tempDir('lw-idem-cli-'));
    home = join(dir, 'home');
    repo = makeRepo(join(dir, 'repo'));
    withTestStore(home);
  });
  afterAll(() => cleanup?.());

  it('five processes submitting with the same id make one task and all print it', async () => {
    const runs = await Promise.all(
      Array.from({ length: 5 }, () => runCli(['submit', '--workspace', repo, '--worker', 'mock', '--request-id', 'cli-retry-0001', '--json', 'once only'], { home })),
    );
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const ids = new Set(runs.map((r) => (JSON.parse(r.stdout) as { task: { id: string } }).task.id));
    expect(ids.size).toBe(1);
    expect(runs.filter((r) => (JSON.parse(r.stdout) as { replayed?: boolean }).replayed).length).toBe(4);
    const listed = JSON.parse((await runCli(['tasks', '--json'], { home })).stdout) as { tasks: unknown[] };
    expect(listed.tasks).toHaveLength(1);
    const text = await runCli(['submit', '--workspace', repo, '--worker', 'mock', '--request-id', 'cli-retry-0001', 'once only'], { home });
    expect(text.stderr).toContain('--request-id cli-retry-0001: already submitted');
  });
});
