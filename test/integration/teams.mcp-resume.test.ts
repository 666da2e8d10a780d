import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { planHook } from '../../main/orchestration/plan-hook.js';
import { advanceTeam } from '../../main/orchestration/team-driver.js';
import { startService } from '../../main/scheduler/service.js';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { setSetting } from '../../main/store/settings.js';
import { listTasks } from '../../main/store/tasks.js';
import { until } from '../helpers/procs.js';
import { inMemory, type McpHarness } from './mcp.helpers.js';
import { taskCachelab } from '../../main/cachelab/task-cachelab.js';

let h: McpHarness | null = null;
let svc: SchedulerService | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  await h?.close();
  h = null;
});


/** The implementer writes v1, then v2 on its follow-up turn. */
const MOCK = { write_files: { 'v.txt': 'v1\n' }, followup: { write_files: { 'v.txt': 'v2\n' } } };

describe('teams over MCP: orchestrate_goal with `team`', () => {
  it('starts an implement_review team from a goal, lists the argument in tools/list, and refuses a bad team naming the field', async () => {
    h = await inMemory();
    const listed = await h.client.listTools();
    const og = listed.tools.find((t) => t.name === 'orchestrate_goal')!;
    expect((og.inputSchema.properties as any).team.properties.strategy.enum).toEqual(['implement_review', 'map_reduce', 'best_of_n']);

    const bad = await h.call('orchestrate_goal', { goal: 'x', workspace: h.repo, team: { strategy: 'implement_review', workers: ['mock'] } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent.message).toMatch(/orchestrate_goal\.team: workers: implement_review takes two workers/);
    expect(listTasks(h.engine.db, {})).toHaveLength(0);

    const ok = await h.call('orchestrate_goal', { goal: 'write v.txt', workspace: h.repo, mode: 'auto_execute', team: { strategy: 'implement_review', workers: ['mock', 'opencode'], rounds: 3 } });
    expect(ok.isError, JSON.stringify(ok.structuredContent)).toBeFalsy();
    const { task, team } = ok.structuredContent;
    expect(team.strategy).toBe('implement_review');
    expect(team.tasks).toHaveLength(2);
    // An MCP client's auto_execute is lowered: the team's first write waits for a person, and the answer says so.
    expect(task).toMatchObject({ kind: 'execute', worker: 'mock', status: 'awaiting_approval', mode: 'auto_readonly' });
    expect(ok.structuredContent.approval).toMatchObject({ waiting: [task.id], modeLowered: { from: 'auto_execute', to: 'auto_readonly' } });
    expect(task.metadata.team).toMatchObject({ strategy: 'implement_review', role: 'implement', rounds: 3 });
  });
});

describe('a team survives its leader', () => {
  it('a review that ended while no leader moved the team on gets its next round when the next leader starts', async () => {
    // The person let MCP clients release writes: the team runs without an approval step.
    h = await inMemory({ configToml: '[approvals]\nallow_mcp = true\n' });
    // The reviewer: a linked script that approves once the diff it is shown has +v2.
    const script = join(h.dir, 'reviewer.mjs');
    writeFileSync(script, `const p = process.argv[2]; console.log(JSON.stringify(p.includes('+v2') ? { summary: 'ok', verdict: 'approve', issues: [] } : { summary: 'not yet', verdict: 'request_changes', issues: [{ file: 'v.txt', severity: 'high', message: 'make it v2' }] }));\n`);
    h.engine.write(() => setSetting(h!.engine.db, 'workers.linked.reviewer', { name: 'reviewer', command: [process.execPath, script, '{prompt}'] }));
    const ok = await h.call('orchestrate_goal', { goal: 'write v.txt', workspace: h.repo, mode: 'auto_execute', metadata: { mock: MOCK }, team: { strategy: 'implement_review', workers: ['mock', 'reviewer'], rounds: 2 } });
    expect(ok.isError, JSON.stringify(ok.structuredContent)).toBeFalsy();
    const [implId, reviewId] = ok.structuredContent.team.tasks as string[];

    // First leader: runs the tasks, but dies (here: its team hook does nothing) before moving the team on.
    svc = await startService(h.engine, { plan: planHook, team: { onEnded: () => undefined, onStart: () => undefined, inputsFor: () => Promise.resolve(null) } });
    const get = (id: string) => listTasks(h!.engine.db, {}).find((t) => t.id === id)!;
    await until(() => get(reviewId).status === 'completed', 60_000, 'review round 1');
    await svc.stop();
    svc = null;
    expect(listTasks(h.engine.db, {})).toHaveLength(2);

    // Next leader: on start, every unfinished team is moved on: a follow-up of the implementer and review 2.
    svc = await startSchedulerService(h.engine);
    await until(() => listTasks(h!.engine.db, {}).length === 3, 60_000, 'review round 2 to appear');
    const review2 = listTasks(h.engine.db, {}).find((t) => t.id !== implId && t.id !== reviewId)!;
    expect(review2.metadata.team).toMatchObject({ role: 'review', round: 2 });
    await until(() => get(review2.id).status === 'completed', 60_000, 'review round 2');
    await until(() => (h!.engine.db.prepare("SELECT COUNT(*) AS n FROM events WHERE type = 'team.ended'").get() as { n: number }).n === 1, 60_000, 'team end');
    expect(get(implId)).toMatchObject({ status: 'completed', attempt: 2 });
    const ended = h.engine.db.prepare("SELECT payload FROM events WHERE type = 'team.ended'").get() as { payload: string };
    expect(JSON.parse(ended.payload)).toMatchObject({ outcome: 'passed', rounds: 2 });

    // Idempotent: moving the ended team on again changes nothing.
    const n = listTasks(h.engine.db, {}).length;
    expect(h.engine.write(() => advanceTeam({ db: h!.engine.db, config: h!.engine.config, homeRoot: h!.engine.home.root, depth: 0, authority: 'engine', cachelab: taskCachelab }, reviewId))).toBeNull();
    expect(listTasks(h.engine.db, {})).toHaveLength(n);
  });
});
