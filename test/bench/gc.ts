/**
 * gc of a big home: N ended tasks (default 10k; BENCH_GC_TASKS), in trees of 5 (a root and 4 children
 * depending on nothing), each with its worker events and a 1 KiB log under artifacts/, every chain
 * anchored. Measures the dry run, the apply (rows, files, one signed tombstone per tree), and
 * `audit verify` after it, which must stay clean and count every tombstone.
 * Run: node bin/run-ts.js test/bench/run.ts gc
 */
import { statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { Engine } from '../../main/engine.js';
import { anchorChains, appendEvent } from '../../main/store/events.js';
import { move } from '../../main/tasks/state.js';
import { makeRepo, tempDir } from '../helpers/env.js';

const TREE = 5;
/** BENCH_GC_FILES=0: no artifact folders (the store's part of the cost alone). */
const FILES = process.env.BENCH_GC_FILES !== '0';

export async function run(opts: { tasks?: number } = {}): Promise<Record<string, number | string>> {
  const n = opts.tasks ?? Number(process.env.BENCH_GC_TASKS ?? 10_000);
  const { dir, cleanup } = tempDir('lw-bench-gc-');
  const engine = new Engine({ home: join(dir, 'home') });
  const ctx = { engine, face: 'cli' as const, depth: 0 };
  const call = (name: string, input: unknown) => runCommand(COMMANDS, ctx, name, input) as Promise<any>;
  try {
    const repo = makeRepo(join(dir, 'repo'));
    const t0 = performance.now();
    for (let made = 0; made < n; made += TREE) {
      const { task: root } = await call('delegate_task', { objective: `bench root ${made}`, workspace: repo, kind: 'explore' });
      const kids = Math.min(TREE, n - made) - 1;
      const ids = [root.id as string];
      if (kids > 0) {
        const { tasks } = await call('delegate_batch', { tasks: Array.from({ length: kids }, (_, i) => ({ objective: `bench child ${made + i}`, workspace: repo, kind: 'explore', parent_id: root.id })) });
        ids.push(...tasks.map((t: { id: string }) => t.id));
      }
      engine.write(() => {
        for (const id of ids) {
          move(engine.db, id, 'queued', 'starting');
          move(engine.db, id, 'starting', 'running');
          appendEvent(engine.db, id, 'worker.message', { text: 'looked at the code and found the answer '.repeat(4) });
          appendEvent(engine.db, id, 'worker.usage', { input: 1200, output: 300 });
          move(engine.db, id, 'running', 'verifying');
          move(engine.db, id, 'verifying', 'completed');
        }
      });
      if (FILES) await Promise.all(ids.map(async (id) => {
        await mkdir(join(engine.home.artifacts, id, 'attempt-1'), { recursive: true });
        await writeFile(join(engine.home.artifacts, id, 'attempt-1', 'raw.log'), 'x'.repeat(1024));
      }));
    }
    while (anchorChains(engine.db) !== null);
    const buildS = (performance.now() - t0) / 1000;
    const events = (engine.db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    const fileBefore = statSync(engine.home.db).size;

    const d0 = performance.now();
    const dry = await call('gc_home', { older_than: '0s' });
    const dryMs = performance.now() - d0;
    const a0 = performance.now();
    const cpu0 = process.cpuUsage();
    const applied = await call('gc_home', { older_than: '0s', apply: true });
    const applyMs = performance.now() - a0;
    const cpu = process.cpuUsage(cpu0);
    const v0 = performance.now();
    const audit = await call('audit_verify', {});
    const verifyMs = performance.now() - v0;
    const left = (engine.db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n;
    if (!audit.ok) throw new Error(`audit verify after gc: ${audit.broken?.reason}`);
    if (left !== 0 || applied.totals.tasks !== n) throw new Error(`gc left ${left} tasks (deleted ${applied.totals.tasks} of ${n})`);
    return {
      tasks: n,
      trees: applied.totals.trees,
      'events before': events,
      'build (s)': Number(buildS.toFixed(1)),
      'dry run (ms)': Math.round(dryMs),
      'apply (ms)': Math.round(applyMs),
      'apply CPU (s; the rest is I/O wait)': Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
      'apply per tree (ms)': Number((applyMs / applied.totals.trees).toFixed(2)),
      'bytes freed (MiB)': Number((applied.totals.bytes / 1024 / 1024).toFixed(2)),
      'dry run bytes (MiB)': Number((dry.totals.bytes / 1024 / 1024).toFixed(2)),
      'store file (MiB, unchanged until VACUUM)': Number((fileBefore / 1024 / 1024).toFixed(2)),
      'audit verify after (ms)': Math.round(verifyMs),
      'audit ok': audit.ok ? 'yes' : 'NO',
      tombstones: audit.tombstones?.count ?? 0,
    };
  } finally {
    engine.close();
    cleanup();
  }
}
