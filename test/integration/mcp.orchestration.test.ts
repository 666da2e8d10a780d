import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { expandPlan } from '../../main/orchestration/expand.js';
import { MAX_PLAN_TASKS, PLAN_RESULT_SCHEMA } from '../../main/tasks/contract/plan-schema.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { BIN, inMemory, type McpHarness } from './mcp.helpers.js';

let h: McpHarness | null = null;
let home: TestHome | null = null;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  await h?.close();
  h = null;
  home?.cleanup();
  home = null;
});

const task = (id: string, deps: string[] = [], kind = 'explore') => ({
  id, title: `task ${id}`, kind, objective: `do ${id}`, depends_on: deps, profile: null, success_criteria: [`${id} done`], verify: [],
});

async function planTask(th: TestHome) {
  await th.call('add_context_pack', { name: 'pack-1', version: '1', text: 'house rules' });
  return (await th.call('orchestrate_goal', { goal: 'improve the repo', workspace: th.repo, mode: 'auto_readonly', context_pack: 'pack-1' })).task;
}

describe('planner result schema', () => {
  it('is strict-mode compatible: every property required, no extra properties, nullable where optional', () => {
    const walk = (node: any) => {
      if (node.type === 'object') {
        expect(node.additionalProperties).toBe(false);
        expect([...node.required].sort()).toEqual(Object.keys(node.properties).sort());
        Object.values(node.properties).forEach(walk);
      }
      if (node.type === 'array') walk(node.items);
    };
    walk(PLAN_RESULT_SCHEMA);
    expect(PLAN_RESULT_SCHEMA.properties.tasks.items.properties.profile.type).toEqual(['string', 'null']);
  });
});

describe('expandPlan', () => {
  it('inserts a DAG of children under the planner, inheriting workspace, mode, context pack and root', async () => {
    home = makeHome();
    const p = await planTask(home);
    const plan = { summary: 'two steps then a change', tasks: [task('a'), task('b', ['a']), task('c', ['a', 'b'], 'execute')] };
    const kids = home.engine.write(() => expandPlan(home!.engine.db, home!.engine.config, home!.engine.home.root, getTask(home!.engine.db, p.id)!, plan));
    expect(kids).toHaveLength(3);
    const [a, b, c] = kids;
    for (const k of kids) {
      expect(k.parentId).toBe(p.id);
      expect(k.rootId).toBe(p.rootId);
      expect(k.workspace).toBe(p.workspace);
      expect(k.mode).toBe('auto_readonly');
      expect(k.contextPack).toBe(p.contextPack);
      expect(k.contextPack).toMatch(/^pack-1/);
    }
    expect(b.dependsOn).toEqual([a.id]);
    expect(c.dependsOn.sort()).toEqual([a.id, b.id].sort());
    expect(c.status).toBe('awaiting_approval'); // execute in auto_readonly waits for a person
    expect(a.successCriteria).toEqual(['a done']);
    // Once only.
    expect(() => expandPlan(home!.engine.db, home!.engine.config, home!.engine.home.root, getTask(home!.engine.db, p.id)!, plan)).toThrow(/already expanded/);
  });

  it.each([
    ['a cycle', { summary: '', tasks: [task('a', ['c']), task('b', ['a']), task('c', ['b'])] }, /cycle among a, b, c/],
    ['an unknown dependency', { summary: '', tasks: [task('a'), task('b', ['zzz'])] }, /tasks\[1\]\.depends_on: unknown plan task "zzz"/],
    ['a duplicate id', { summary: '', tasks: [task('a'), task('a')] }, /tasks\[1\]\.id: duplicate/],
    ['a self-dependency', { summary: '', tasks: [task('a', ['a'])] }, /depends on itself/],
    ['too many tasks', { summary: '', tasks: Array.from({ length: MAX_PLAN_TASKS + 1 }, (_, i) => task(`t${i}`)) }, /at most 12/],
    ['a nested planner', { summary: '', tasks: [task('a', [], 'plan')] }, /tasks\[0\]\.kind/],
    ['an unknown profile', { summary: '', tasks: [task('a'), { ...task('b'), profile: 'wizard' }] }, /result\.tasks\[1\]\.profile: unknown profile/],
    ['extra fields', { summary: '', tasks: [{ ...task('a'), priority: 3 }] }, /tasks\[0\]/],
    ['no JSON at all', 'I think we should refactor', /did not return JSON/],
  ])('rejects %s whole, inserting nothing', async (_name, plan, message) => {
    home = makeHome();
    const p = await planTask(home);
    const before = (home.engine.db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n;
    expect(() => home!.engine.write(() => expandPlan(home!.engine.db, home!.engine.config, home!.engine.home.root, getTask(home!.engine.db, p.id)!, plan))).toThrow(message);
    expect((home.engine.db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n).toBe(before);
  });
});

describe('orchestrate_goal end to end (MCP client, scheduler, mock planner)', () => {
  it('a planner result becomes a DAG of child tasks that then run', async () => {
    h = await inMemory();
    svc = await startSchedulerService(h.engine);
    const plan = { summary: 'explore, then review', tasks: [task('look'), task('check', ['look'], 'review'), task('fix', ['look'], 'execute')] };
    const o = await h.call('orchestrate_goal', { goal: 'tidy up', workspace: h.repo, metadata: { mock: { result: plan } } });
    const planner = o.structuredContent.task;
    const w = await h.call('wait_tasks', { ids: [planner.id], timeout_s: 30 });
    expect(w.structuredContent.tasks[0].status).toBe('completed');
    const tree = await h.call('get_task_tree', { id: planner.id });
    const kids = tree.structuredContent.roots[0].children;
    expect(kids.map((k: any) => k.name).sort()).toEqual(['task check', 'task fix', 'task look']);
    const look = kids.find((k: any) => k.name === 'task look');
    const check = kids.find((k: any) => k.name === 'task check');
    const fix = kids.find((k: any) => k.name === 'task fix');
    expect(check.dependsOn).toEqual([look.id]);
    // The read-only children run; the execute child waits for a person.
    const w2 = await h.call('wait_tasks', { ids: [look.id, check.id], timeout_s: 30 });
    expect(w2.structuredContent.reason).toBe('settled');
    expect(w2.structuredContent.tasks.map((t: any) => t.status)).toEqual(['completed', 'completed']);
    expect((await h.call('get_task', { id: fix.id })).structuredContent.task.status).toBe('awaiting_approval');
  });

  it('a cyclic plan fails the planner and creates no task', async () => {
    h = await inMemory();
    svc = await startSchedulerService(h.engine);
    const plan = { summary: 'loop', tasks: [task('a', ['b']), task('b', ['a'])] };
    const planner = (await h.call('orchestrate_goal', { goal: 'go round', workspace: h.repo, metadata: { mock: { result: plan } } })).structuredContent.task;
    const w = await h.call('wait_tasks', { ids: [planner.id], timeout_s: 30 });
    const t = (await h.call('get_task', { id: planner.id })).structuredContent.task;
    expect(w.structuredContent.reason).toBe('settled');
    expect(t.status).toBe('failed');
    expect(t.error.message).toMatch(/cycle/);
    expect((await h.call('list_tasks')).structuredContent.tasks).toHaveLength(1);
  });
});

describe('compare and review chains', () => {
  it('compare_workers puts one execute task per worker in one tree, each reviewed by another worker', async () => {
    home = makeHome();
    const r = await home.call('compare_workers', { objective: 'add a LICENSE file', workspace: home.repo, workers: ['mock', 'codex'], review_by: 'claude-code', verify: ['test -f LICENSE'] });
    expect(r.candidates.map((t: any) => t.worker)).toEqual(['mock', 'codex']);
    expect(new Set(r.candidates.map((t: any) => t.rootId)).size).toBe(1);
    expect(r.candidates.every((t: any) => t.kind === 'execute' && t.verify[0] === 'test -f LICENSE')).toBe(true);
    expect(r.reviews).toHaveLength(2);
    r.reviews.forEach((rv: any, i: number) => {
      expect(rv.kind).toBe('review');
      expect(rv.worker).toBe('claude-code');
      expect(rv.dependsOn).toEqual([r.candidates[i].id]);
      expect(rv.rootId).toBe(r.rootId);
      expect(rv.objective).toContain(`lightworker/${r.candidates[i].id}`);
    });
    const report = await home.call('compare_report', { id: r.reviews[1].id });
    expect(report.candidates.map((c: any) => [c.worker, c.status, c.review.worker])).toEqual([
      ['mock', 'awaiting_approval', 'claude-code'],
      ['codex', 'awaiting_approval', 'claude-code'],
    ]);
  });

  it('refuses a reviewer that is one of the compared workers, and a duplicate worker', async () => {
    home = makeHome();
    await expect(home.call('compare_workers', { objective: 'x', workspace: home.repo, workers: ['mock', 'codex'], review_by: 'codex' })).rejects.toThrow(/review_by/);
    await expect(home.call('compare_workers', { objective: 'x', workspace: home.repo, workers: ['mock', 'mock'] })).rejects.toThrow(/twice/);
    expect((await home.call('list_tasks')).tasks).toHaveLength(0);
  });

  it('delegate_reviewed chains an execute task with a read-only review by another worker', async () => {
    home = makeHome();
    const r = await home.call('delegate_reviewed', { objective: 'rename foo', workspace: home.repo, worker: 'codex', review_by: 'claude-code' });
    expect(r.task.kind).toBe('execute');
    expect(r.review.kind).toBe('review');
    expect(r.review.parentId).toBe(r.task.id);
    expect(r.review.dependsOn).toEqual([r.task.id]);
    expect(r.review.waitingOn).toEqual([r.task.id]);
    await expect(home.call('delegate_reviewed', { objective: 'x', workspace: home.repo, worker: 'codex', review_by: 'codex' })).rejects.toThrow(/its own change/);
  });
});

describe('CLI: orchestrate, compare, submit --review-by', () => {
  it('queue a planner, a comparison with reviews, and a reviewed execute task', async () => {
    home = makeHome();
    const cli = (...args: string[]) =>
      JSON.parse(execFileSync(process.execPath, [BIN, '--home', home!.home, ...args, '--json'], { encoding: 'utf8', cwd: home!.repo, stdio: ['ignore', 'pipe', 'pipe'] }));
    const o = cli('orchestrate', 'split', 'this', 'goal', '--mode', 'plan_only');
    expect(o.task).toMatchObject({ kind: 'plan', status: 'awaiting_approval', objective: 'split this goal', workspace: home.repo });
    const c = cli('compare', '--workers', 'mock,codex', '--review-by', 'claude-code', '--verify', 'true', 'add', 'a', 'file');
    expect(c.candidates.map((t: any) => t.worker)).toEqual(['mock', 'codex']);
    expect(c.reviews.map((t: any) => t.worker)).toEqual(['claude-code', 'claude-code']);
    const report = cli('compare', '--show', c.candidates[1].id);
    expect(report.candidates).toHaveLength(2);
    const s = cli('submit', '--worker', 'codex', '--review-by', 'mock', 'rename', 'a', 'thing');
    expect(s.task.kind).toBe('execute');
    expect(s.review).toMatchObject({ kind: 'review', worker: 'mock', dependsOn: [s.task.id] });
  }, 120_000);
});
