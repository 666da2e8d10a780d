// A leader built through main/app.ts alone, in a process that never loads the command table (main/commands/):
// before app.ts, the scheduler learnt about plans and teams from setters that ran only when commands/ was
// imported, so such a leader ran a planner and never created its children, or ended a review and never
// started the next round. Nothing here may import main/commands/, test/helpers/env.ts included (the last
// test checks the module graph).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngine, startSchedulerService, type SchedulerService } from '../../main/app.js';
import type { Engine } from '../../main/engine.js';
import { teamInputSchema } from '../../main/orchestration/team-schema.js';
import { createTeam } from '../../main/orchestration/teams.js';
import { startService } from '../../main/scheduler/service.js';
import { setSetting } from '../../main/store/settings.js';
import { listTasks } from '../../main/store/tasks.js';
import { createTasks, type CreateContext } from '../../main/tasks/create.js';
import { taskCachelab } from '../../main/cachelab/task-cachelab.js';
import { taskInputSchema } from '../../main/tasks/schema.js';
import { until } from '../helpers/procs.js';

let engine: Engine | null = null;
let svc: SchedulerService | null = null;
let cleanup: (() => void) | null = null;
afterEach(async () => {
  await svc?.stop();
  svc = null;
  engine?.close();
  engine = null;
  cleanup?.();
  cleanup = null;
});

/** A temp home, opened through app.ts, and a git repository with one commit beside it. */
function openHome(): { engine: Engine; repo: string; dir: string; ctx: CreateContext } {
  const dir = mkdtempSync(join(tmpdir(), 'lw-app-'));
  cleanup = () => rmSync(dir, { recursive: true, force: true });
  const repo = join(dir, 'repo');
  mkdirSync(repo);
  writeFileSync(join(repo, 'README.md'), '# test repo\n');
  for (const args of [['init', '-q', '-b', 'main'], ['add', '-A'], ['-c', 'user.email=t@example.com', '-c', 'user.name=T', '-c', 'commit.gpgsign=false', 'commit', '-q', '-m', 'initial']]) execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
  engine = openEngine({ home: join(dir, 'home') });
  const ctx: CreateContext = { db: engine.db, config: engine.config, homeRoot: engine.home.root, depth: 0, authority: 'person', cachelab: taskCachelab };
  return { engine, repo, dir, ctx };
}

const step = (id: string, deps: string[] = []) => ({ id, title: `task ${id}`, kind: 'explore', objective: `do ${id}`, depends_on: deps, profile: null, success_criteria: [`${id} done`], verify: [] });

describe('a leader built through main/app.ts, without the command table', () => {
  it('expands a completed plan into its child tasks, which then run', async () => {
    const h = openHome();
    const plan = { summary: 'look, then check', tasks: [step('look'), step('check', ['look'])] };
    const [planner] = h.engine.write(() => createTasks(h.ctx, [taskInputSchema.parse({ objective: 'tidy up', workspace: h.repo, kind: 'plan', metadata: { mock: { result: plan } } })]));
    svc = await startSchedulerService(h.engine);
    await until(() => listTasks(h.engine.db, {}).filter((t) => t.parentId === planner.id && t.status === 'completed').length === 2, 30_000, 'both children of the plan to complete');
    const kids = listTasks(h.engine.db, {}).filter((t) => t.parentId === planner.id);
    expect(kids.map((k) => k.name).sort()).toEqual(['task check', 'task look']);
    expect(kids.find((k) => k.name === 'task check')!.dependsOn).toEqual([kids.find((k) => k.name === 'task look')!.id]);
  });

  it("moves a team on: a review asking for changes gets the implementer's follow-up and the next round", async () => {
    const h = openHome();
    const script = join(h.dir, 'reviewer.mjs');
    writeFileSync(script, `console.log(JSON.stringify({ summary: 'not yet', verdict: 'request_changes', issues: [{ file: 'v.txt', severity: 'high', message: 'make it v2' }] }));\n`);
    h.engine.write(() => setSetting(h.engine.db, 'workers.linked.reviewer', { name: 'reviewer', command: [process.execPath, script, '{prompt}'] }));
    const team = teamInputSchema.parse({ strategy: 'implement_review', objective: 'write v.txt', workspace: h.repo, mode: 'auto_execute', workers: ['mock', 'reviewer'], rounds: 2, metadata: { mock: { write_files: { 'v.txt': 'v1\n' } } } });
    const [impl, review] = h.engine.write(() => createTeam(h.ctx, team));
    svc = await startSchedulerService(h.engine);
    await until(() => listTasks(h.engine.db, {}).length === 3, 30_000, 'review round 2 to appear');
    const round2 = listTasks(h.engine.db, {}).find((t) => t.id !== impl.id && t.id !== review.id)!;
    expect(round2.metadata.team).toMatchObject({ role: 'review', round: 2 });
    expect(listTasks(h.engine.db, {}).find((t) => t.id === review.id)!.status).toBe('completed');
  });

  it('refuses to build a leader without its hooks (a plain JavaScript caller)', async () => {
    const h = openHome();
    const startUntyped = startService as unknown as (...args: unknown[]) => Promise<SchedulerService>;
    await expect(startUntyped(h.engine, undefined)).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/needs its plan and team hooks/) });
    await expect(startUntyped(h.engine, { plan: () => undefined })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/needs its team hook/) });
  });

  it('this file reaches main/app.ts and the hooks without importing main/commands/', () => {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const src = readFileSync(file, 'utf8');
      for (const m of src.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)) {
        const next = resolve(dirname(file), m[1]).replace(/\.js$/, '.ts');
        if (next.endsWith('.ts') && (next.startsWith(join(root, 'main')) || next.startsWith(join(root, 'test')))) visit(next);
      }
    };
    visit(fileURLToPath(import.meta.url));
    for (const f of ['main/app.ts', 'main/orchestration/plan-hook.ts', 'main/orchestration/team-hook.ts']) expect(seen.has(join(root, f))).toBe(true);
    expect([...seen].filter((f) => f.includes('/main/commands/'))).toEqual([]);
  });
});
