import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { AppError, COMMAND_NAMES, LightWorker, methodName, type EventRow, type Task } from '../../main/lib/index.js';
import { makeRepo, tempDir } from '../helpers/env.js';

let t: ReturnType<typeof tempDir>;
let repo: string;
beforeAll(() => {
  t = tempDir('lw-lib-');
  repo = makeRepo(join(t.dir, 'repo'));
});
afterAll(() => t.cleanup());

const explore = (objective: string, mock: Record<string, unknown> = { result: { summary: 'found it' } }) => ({
  objective,
  kind: 'explore' as const,
  workspace: repo,
  worker: 'mock',
  metadata: { mock },
});

/** Collect events of one task until its status reaches `until` (following live). */
async function statusesUntil(events: AsyncIterable<EventRow>, until: string): Promise<string[]> {
  const seen: string[] = [];
  for await (const e of events) {
    if (e.type !== 'task.status') continue;
    seen.push(String(e.payload.to));
    if (e.payload.to === until) break;
  }
  return seen;
}

describe('the library: one typed method per command of the table', () => {
  it('has a method for every command, named by methodName (snake_case → camelCase)', () => {
    const missing = [...COMMANDS.keys()].filter((name) => typeof (LightWorker.prototype as unknown as Record<string, unknown>)[methodName(name)] !== 'function');
    expect(missing).toEqual([]);
    expect([...COMMANDS.keys()].sort()).toEqual([...COMMAND_NAMES].sort());
    expect(methodName('get_cache_metrics')).toBe('getCacheMetrics');
  });

  it('types inputs and results from the zod schemas and handlers', () => {
    type LW = LightWorker;
    expectTypeOf<LW['delegateTask']>().parameter(0).toHaveProperty('objective').toEqualTypeOf<string>();
    expectTypeOf<Awaited<ReturnType<LW['getTask']>>>().toHaveProperty('task');
    expectTypeOf<Awaited<ReturnType<LW['delegateTask']>>['task']['status']>().toEqualTypeOf<Task['status']>();
    // Commands whose whole input is optional take no argument.
    expectTypeOf<LW['listTasks']>().toBeCallableWith();
    // A field the schema does not have is a compile error (never called: this checks types only).
    const typo = (lw: LW) =>
      lw.delegateTask({
        objective: 'x',
        workspace: '/',
        // @ts-expect-error not a field of delegate_task
        objectve: 'y',
      });
    expect(typeof typo).toBe('function');
  });
});

describe('the library in-process', () => {
  it('leads, runs a mock task to completion while events() follows it live, and wait() returns settled', async () => {
    const lw = await LightWorker.open({ home: join(t.dir, 'home-lead') });
    try {
      expect(lw.scheduler()?.role).toBe('leader');
      const { task } = await lw.delegateTask(explore('look around'));
      expect(task.status).toBe('queued');
      const statuses = await statusesUntil(lw.events({ taskId: task.id }), 'completed');
      expect(statuses).toEqual(['starting', 'running', 'verifying', 'completed']);
      const waited = await lw.wait(task.id);
      expect(waited.reason).toBe('settled');
      const shown = await lw.getTask({ id: task.id });
      expect(shown.task.result).toMatchObject({ summary: 'found it' });
    } finally {
      await lw.close();
    }
  });

  it('rejects bad input with an AppError naming the field, changing nothing', async () => {
    const lw = await LightWorker.open({ home: join(t.dir, 'home-errors'), lead: false });
    try {
      const err = await lw.delegateTask({ ...explore('x'), objective: '' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('invalid_input');
      expect((err as AppError).field).toBe('objective');
      const missing = await lw.getTask({ id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }).catch((e: unknown) => e);
      expect((missing as AppError).code).toBe('not_found');
      expect((await lw.listTasks()).tasks).toEqual([]);
    } finally {
      await lw.close();
    }
  });

  it('a standby instance follows what a leader in another instance does; close() ends its iterators', async () => {
    const home = join(t.dir, 'home-standby');
    const standby = await LightWorker.open({ home, lead: false });
    const leader = await LightWorker.open({ home });
    try {
      expect(standby.scheduler()).toBeNull();
      const { task } = await standby.delegateTask(explore('queued by the standby'));
      const statuses = await statusesUntil(standby.events({ taskId: task.id, types: ['task.status'] }), 'completed');
      expect(statuses.at(-1)).toBe('completed');
      // An iterator waiting for more ends when its instance closes.
      const pending = (async () => {
        const seen: number[] = [];
        for await (const e of standby.events({ after: Number.MAX_SAFE_INTEGER })) seen.push(e.seq);
        return seen;
      })();
      await new Promise((r) => setTimeout(r, 50));
      await standby.close();
      expect(await pending).toEqual([]);
    } finally {
      await standby.close();
      await leader.close();
    }
  });

  it('the built bundle (out/main/lib.js, what the package exports) runs the mock worker', async () => {
    const lib = (await import(pathToFileURL(join(import.meta.dirname, '../../out/main/lib.js')).href)) as typeof import('../../main/lib/index.js');
    const lw = await lib.LightWorker.open({ home: join(t.dir, 'home-bundle') });
    try {
      const { task } = await lw.delegateTask(explore('from the bundle'));
      const waited = await lw.wait(task.id, { timeoutMs: 30_000 });
      expect(waited.tasks[0]).toMatchObject({ status: 'completed' });
      expect(waited.tasks[0].error).toBeUndefined(); // a summary leaves out what a task does not have
    } finally {
      await lw.close();
    }
  });
});
