/**
 * Worktree allocation: bare `git worktree add` versus LightWorker's whole allocation (prepareWorkspace:
 * containment + disk checks, source status snapshot, two-phase record, repository lock, worktree add,
 * port block, setup lookup) on a generated 10k-file repository.
 * `lightworker_own_work_ms` is the allocation minus its own `git worktree add` (timings recorded in the
 * worktree.allocated event), which machine load disturbs far less than the totals. Run: node bin/run-ts.js test/bench/worktree-alloc.ts
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { Engine } from '../../main/engine.js';
import { prepareWorkspace } from '../../main/isolation/workspace.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { transition } from '../../main/tasks/state.js';
import { tempDir } from '../helpers/env.js';

const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

function gitIn(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 })
    .toString()
    .trim();
}

export function makeBigRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  gitIn(dir, 'init', '-q', '-b', 'main');
  gitIn(dir, 'config', 'user.email', 'bench@example.com');
  gitIn(dir, 'config', 'user.name', 'Bench');
  const perDir = 100;
  for (let i = 0; i < FILES; i++) {
    const d = join(dir, `pkg${Math.floor(i / perDir)}`);
    if (i % perDir === 0) mkdirSync(d, { recursive: true });
    writeFileSync(join(d, `file${i}.ts`), `export const value${i} = ${i};\n`.repeat(4));
  }
  gitIn(dir, 'add', '-A');
  gitIn(dir, 'commit', '-q', '-m', 'bench');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(): Promise<Record<string, number | string>> {
  const { dir, cleanup } = tempDir('lw-bench-');
  try {
    const repo = join(dir, 'repo');
    makeBigRepo(repo);
    const engine = new Engine({ home: join(dir, 'home') });
    const ctx = { engine, face: 'cli' as const, depth: 0 };
    const bare: number[] = [];
    const lw: number[] = [];
    const own: number[] = [];
    const status: number[] = [];
    const bareOnce = (i: number) => {
      const t0 = performance.now();
      gitIn(repo, 'worktree', 'add', '--quiet', '-b', `bare-${i}`, join(dir, `bare-${i}`), 'HEAD');
      bare.push(performance.now() - t0);
    };
    const lwOnce = async (i: number) => {
      const { task } = (await runCommand(COMMANDS, ctx, 'delegate_task', {
        objective: `bench ${i}`,
        kind: 'execute',
        workspace: repo,
        mode: 'auto_execute',
      })) as { task: { id: string } };
      engine.write(() => transition(engine.db, task.id, 'queued', 'starting'));
      const t0 = performance.now();
      await prepareWorkspace(engine, requireTask(engine.db, task.id));
      lw.push(performance.now() - t0);
      const ev = listEvents(engine.db, { taskId: task.id, types: ['worktree.allocated'] }).events[0];
      const timings = ev.payload.timings as Record<string, number>;
      own.push((ev.payload.durationMs as number) - timings.gitAddMs);
      status.push(timings.sourceStatusMs);
    };
    try {
      // Interleaved (and alternating which goes first) so machine load affects both alike.
      for (let i = 0; i < ROUNDS; i++) {
        if (i % 2 === 0) {
          bareOnce(i);
          await lwOnce(i);
        } else {
          await lwOnce(i);
          bareOnce(i);
        }
      }
    } finally {
      engine.close();
    }
    const b = median(bare);
    const l = median(lw);
    return {
      files: FILES,
      rounds: ROUNDS,
      bare_worktree_add_ms_median: Math.round(b),
      lightworker_allocation_ms_median: Math.round(l),
      overhead_ms: Math.round(l - b),
      lightworker_own_work_ms_median: Math.round(median(own)),
      source_status_ms_median: Math.round(median(status)),
      ratio: Number((l / b).toFixed(2)),
      bare_samples_ms: bare.map(Math.round).join(' '),
      lightworker_samples_ms: lw.map(Math.round).join(' '),
    };
  } finally {
    cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await run();
  const w = Math.max(...Object.keys(r).map((k) => k.length));
  for (const [k, v] of Object.entries(r)) process.stdout.write(`${k.padEnd(w)}  ${v}\n`);
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
