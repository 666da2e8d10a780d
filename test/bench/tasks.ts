// Creating 10k tasks and listing them: the store's figures at ten thousand tasks.
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { makeHome } from '../helpers/env.js';

export async function run(): Promise<Record<string, number>> {
  const h = makeHome();
  try {
    const ctx = { engine: h.engine, face: 'cli' as const, depth: 0 };
    const n = 10_000;
    let t = performance.now();
    for (let i = 0; i < n; i++) await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `bench task ${i}`, workspace: h.repo });
    const createMs = performance.now() - t;
    t = performance.now();
    const batches = 100;
    for (let b = 0; b < batches; b++) {
      await runCommand(COMMANDS, ctx, 'delegate_batch', { tasks: Array.from({ length: 100 }, (_, i) => ({ objective: `batch ${b}.${i}`, workspace: h.repo })) });
    }
    const batchMs = performance.now() - t;
    t = performance.now();
    const all = (await runCommand(COMMANDS, ctx, 'list_tasks', { limit: 10_000 })) as { tasks: unknown[] };
    const listAllMs = performance.now() - t;
    t = performance.now();
    for (let i = 0; i < 100; i++) await runCommand(COMMANDS, ctx, 'list_tasks', { limit: 100 });
    const listPageMs = (performance.now() - t) / 100;
    return {
      'create 10k (one call each), ms': createMs,
      'create, tasks/s': (n / createMs) * 1000,
      'create 10k in batches of 100, ms': batchMs,
      'list 10k (one call), ms': listAllMs,
      'listed': all.tasks.length,
      'list first page of 100, ms': listPageMs,
    };
  } finally {
    h.cleanup();
  }
}
