/**
 * What read-only safety costs: preparing a read-only task's workdir in place (the source-status check
 * only) versus in a disposable snapshot (HEAD + uncommitted changes) on a generated 10k-file repository
 * with a few uncommitted edits: the first snapshot (store + checkout of every file), a reused one (same
 * source state: no file written), one moved to a new state (only the changed files written), and giving
 * a snapshot back after a task. Each round uses a fresh home. Run: node bin/run-ts.js test/bench/run.ts readonly-snapshot
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { Engine } from '../../main/engine.js';
import { finishWorkspace, prepareWorkspace, type PreparedWorkspace } from '../../main/isolation/workspace.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { tempDir } from '../helpers/env.js';
import { makeBigRepo } from './worktree-alloc.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(): Promise<Record<string, number | string>> {
  const { dir, cleanup } = tempDir('lw-bench-');
  const t: Record<string, number[]> = { inPlace: [], first: [], reused: [], moved: [], release: [], stateReused: [] };
  try {
    const repo = join(dir, 'repo');
    makeBigRepo(repo);
    // The user's uncommitted work: edits to tracked files and a few new files.
    for (let i = 0; i < 10; i++) appendFileSync(join(repo, `pkg${i}`, `file${i * 100}.ts`), '// edited\n');
    for (let i = 0; i < 5; i++) writeFileSync(join(repo, `new-${i}.ts`), `export const n = ${i};\n`);
    for (let round = 0; round < ROUNDS; round++) {
      const engine = new Engine({ home: join(dir, `home-${round}`) });
      const ctx = { engine, face: 'cli' as const, depth: 0 };
      const prepare = async (key: keyof typeof t, inPlace = false): Promise<PreparedWorkspace> => {
        const { task } = (await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `bench ${key}`, kind: 'explore', workspace: repo })) as { task: { id: string } };
        const t0 = performance.now();
        const ws = await prepareWorkspace(engine, requireTask(engine.db, task.id), undefined, { readOnlyInPlace: inPlace });
        t[key].push(performance.now() - t0);
        const acquired = listEvents(engine.db, { taskId: task.id, types: ['snapshot.acquired'] }).events[0];
        if (key === 'reused' && acquired) t.stateReused.push((acquired.payload.timings as { stateMs: number }).stateMs);
        const r0 = performance.now();
        await finishWorkspace(engine, requireTask(engine.db, task.id), ws);
        if (!inPlace) t.release.push(performance.now() - r0);
        return ws;
      };
      try {
        await prepare('inPlace', true);
        await prepare('first');
        await prepare('reused');
        appendFileSync(join(repo, 'pkg50', 'file5000.ts'), `// round ${round}\n`);
        await prepare('moved');
      } finally {
        engine.close();
      }
    }
    const m = (k: string) => Math.round(median(t[k]));
    return {
      files: 10_000,
      rounds: ROUNDS,
      in_place_ms_median: m('inPlace'),
      first_snapshot_ms_median: m('first'),
      reused_snapshot_ms_median: m('reused'),
      reused_state_commit_ms_median: m('stateReused'),
      moved_snapshot_ms_median: m('moved'),
      release_ms_median: m('release'),
      first_samples_ms: t.first.map(Math.round).join(' '),
      reused_samples_ms: t.reused.map(Math.round).join(' '),
    };
  } finally {
    cleanup();
  }
}

