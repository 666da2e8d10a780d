import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { makeHome, type TestHome } from '../helpers/env.js';

// The engine side of the console's review page: cost per task and per tree from a price
// table the user edits, a goal that works with the default mock worker, and "open in editor".

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});

async function runAll(ids: string[]): Promise<void> {
  svc ??= await startSchedulerService(h.engine);
  const r = await waitTasks(h.engine, ids, 60_000);
  expect(r.reason).toBe('settled');
}

describe('cost per task and per tree', () => {
  it('prices tokens by the reported model (cached input at the cached price); config [prices] overrides; unknown models stay unpriced', async () => {
    const usage = { input: 1_000_000, cached: 400_000, output: 100_000 };
    const parent = await h.call('delegate_task', { objective: 'a', workspace: h.repo, metadata: { mock: { model: 'claude-sonnet-4-5', usage } } });
    const child = await h.call('delegate_task', { objective: 'b', workspace: h.repo, parent_id: parent.task.id, metadata: { mock: { model: 'gpt-5.5-mini', usage } } });
    const odd = await h.call('delegate_task', { objective: 'c', workspace: h.repo, parent_id: parent.task.id, metadata: { mock: { model: 'house-model-1', usage } } });
    await runAll([parent.task.id, child.task.id, odd.task.id]);

    const p = await h.call('get_task', { id: parent.task.id });
    // 600k uncached × $3 + 400k cached × $0.30 + 100k out × $15, per million.
    expect(p.cost.task.usd).toBeCloseTo(1.8 + 0.12 + 1.5, 6);
    expect(p.cost.task.models).toEqual([{ model: 'claude-sonnet-4-5', inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 100_000, usd: expect.any(Number) }]);
    // The tree: the Claude task + the mini one (0.15 + 0.01 + 0.2); the house model is unpriced, named, and left out.
    expect(p.cost.root.usd).toBeCloseTo(3.42 + 0.36, 6);
    expect(p.cost.root.unpriced).toEqual(['house-model-1']);
    const o = await h.call('get_task', { id: odd.task.id });
    expect(o.cost.task).toMatchObject({ usd: null, unpriced: ['house-model-1'] });

    const tree = await h.call('get_task_tree', { id: child.task.id });
    expect(tree.cost.usd).toBeCloseTo(3.78, 6);
    const kids = tree.roots[0].children as { id: string; costUsd: number | null }[];
    expect(tree.roots[0].costUsd).toBeCloseTo(3.42, 6);
    expect(kids.find((k) => k.id === odd.task.id)!.costUsd).toBeNull();

    // The user edits the table through settings: a new model and an override, kept in config.toml.
    await h.call('update_settings', { settings: { prices: { 'claude-sonnet-4-5': { input: 1, output: 2 }, 'house-model-1': { input: 10, cached: 1, output: 10 } } } });
    expect(readFileSync(h.engine.home.config, 'utf8')).toMatch(/prices/);
    const p2 = await h.call('get_task', { id: parent.task.id });
    // No cached price given: cached tokens cost the input price.
    expect(p2.cost.task.usd).toBeCloseTo(1 + 0.2, 6);
    expect(p2.cost.root.unpriced).toEqual([]);
    expect(p2.cost.root.usd).toBeCloseTo(1.2 + 0.36 + (6 + 0.4 + 1), 6);
  });

  it('a bad price is refused naming the key, and nothing changes', async () => {
    await expect(h.call('update_settings', { settings: { prices: { 'gpt-5.5': { input: -1, output: 2 } } } })).rejects.toThrow(/prices\.gpt-5\.5\.input/);
    expect(existsSync(h.engine.home.config)).toBe(false);
    expect(h.engine.config.prices).toEqual({});
  });
});

describe('a goal with the default mock worker', () => {
  it('plans two steps from the goal and runs them (it used to fail: "a plan needs at least one task")', async () => {
    const o = await h.call('orchestrate_goal', { goal: 'add a changelog', workspace: h.repo });
    await runAll([o.task.id]);
    const planner = (await h.call('get_task', { id: o.task.id })).task;
    expect(planner.status).toBe('completed');
    const tree = await h.call('get_task_tree', { id: o.task.id });
    const kids = tree.roots[0].children as { id: string; name: string }[];
    expect(kids.map((k) => k.name)).toEqual(['survey: add a changelog', 'report: add a changelog']);
    await runAll(kids.map((k) => k.id));
    for (const k of kids) expect((await h.call('get_task', { id: k.id })).task.status).toBe('completed');
  });
});

describe('open_in_editor', () => {
  /** An "editor" that records its argv and cwd, so the test sees what was started. */
  function fakeEditor(): { bin: string; log: string } {
    const dir = join(h.root, 'bin');
    mkdirSync(dir, { recursive: true });
    const log = join(h.root, 'editor.log');
    const bin = join(dir, 'fake-editor');
    writeFileSync(bin, `#!/bin/sh\nprintf '%s\\n' "$PWD" "$@" > '${log}'\n`);
    chmodSync(bin, 0o755);
    return { bin, log };
  }

  it('opens the worktree of an execute task with the configured argv ({path} replaced), no shell', async () => {
    const ed = fakeEditor();
    h.configure(`[editor]\ncommand = ["${ed.bin}", "--new-window", "{path}"]\n`);
    const t = await h.call('delegate_task', { objective: 'w', kind: 'execute', mode: 'auto_execute', workspace: h.repo, metadata: { mock: { write_files: { 'a.txt': 'a\n' } } } });
    await runAll([t.task.id]);
    const task = (await h.call('get_task', { id: t.task.id })).task;
    const r = await h.call('open_in_editor', { id: t.task.id.slice(0, 8) });
    expect(r).toMatchObject({ target: 'worktree', path: task.worktreePath, argv: [ed.bin, '--new-window', task.worktreePath] });
    await expect.poll(() => (existsSync(ed.log) ? readFileSync(ed.log, 'utf8') : '')).toBe(`${task.worktreePath}\n--new-window\n${task.worktreePath}\n`);
  });

  it('without [editor]: a read-only task opens its workspace; a missing editor or a terminal one is a clear error', async () => {
    const t = await h.call('delegate_task', { objective: 'r', workspace: h.repo });
    const { openInEditor } = await import('../../main/isolation/editor.js');
    const task = (await h.call('get_task', { id: t.task.id })).task;
    const ed = fakeEditor();
    const r = await openInEditor(h.engine.config, task, { PATH: '/usr/bin:/bin', VISUAL: `${ed.bin} -w` });
    expect(r).toMatchObject({ target: 'workspace', path: h.repo, argv: [ed.bin, '-w', h.repo] });
    await expect(openInEditor(h.engine.config, task, { PATH: '/nowhere' })).rejects.toThrow(/editor "code" is not an executable on PATH/);
    await expect(openInEditor(h.engine.config, task, { PATH: '/usr/bin', EDITOR: 'vim' })).rejects.toThrow(/runs in a terminal; set \[editor\] command/);
  });
});

describe('repositories', () => {
  it('list_workspaces names each repository once, most recent first', async () => {
    const { makeRepo } = await import('../helpers/env.js');
    const other = makeRepo(join(h.root, 'other'));
    const a = await h.call('delegate_task', { objective: 'a', workspace: h.repo, mode: 'plan_only' });
    await h.call('delegate_task', { objective: 'b', workspace: h.repo, mode: 'plan_only' });
    const c = await h.call('delegate_task', { objective: 'c', workspace: other, mode: 'plan_only' });
    const w = await h.call('list_workspaces');
    expect(w.workspaces.map((x: { workspace: string; tasks: number }) => [x.workspace, x.tasks])).toEqual([
      [other, 1],
      [h.repo, 2],
    ]);
    expect(a.task.workspace).toBe(h.repo);
    expect(c.task.workspace).toBe(other);
  });
});
