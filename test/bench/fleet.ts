// Fleet figures: trivial tasks drained by 1 runner against 3 runners on one PostgreSQL (each
// runner a separate home standing in for a host, with its own clone and 4 slots; the fleet limit is not
// the bottleneck), and how long a claim takes under that contention (the `claimMs` each runner records in
// its `fleet.placed` event: the advisory lock, the SKIP LOCKED row and the limit counts, in one
// transaction). The worker is the instant fake codex (as in the scheduler bench). Runners are started and
// registered before the clock starts; the clock runs from submission to the last task's end.
// `node bin/run-ts.js test/bench/run.ts fleet` (~1 min, not in the default set). The throwaway server runs
// with fsync off (test/helpers/postgres.ts).
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { postgresUnavailable, startTestPostgres, storeConfigFor } from '../helpers/postgres.js';

const FAKE = process.env.LIGHTWORKER_BENCH_CODEX ?? fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));
const TASKS = Number(process.env.LIGHTWORKER_BENCH_FLEET_TASKS ?? 300);
type Figures = Record<string, number | string>;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function drain(url: string, runners: number): Promise<{ seconds: number; claimP50: number; claimP95: number; perRunner: string }> {
  const t = tempDir('lw-bench-fleet-');
  const store = storeConfigFor(url);
  const origin = makeRepo(join(t.dir, 'origin'));
  const homes: string[] = [];
  const host = (name: string, slots: number) => {
    const dir = join(t.dir, name);
    mkdirSync(join(dir, 'home'), { recursive: true });
    execFileSync('git', ['clone', '-q', origin, join(dir, 'api')]);
    writeFileSync(
      join(dir, 'home', 'config.toml'),
      `${store}[fleet]\nhost_id = "${name}"\nrepos = { "api" = "${join(dir, 'api')}" }\nmax_concurrency = 64\n` +
        `[scheduler]\nmax_concurrency = ${slots}\nper_repository = 64\nper_root = 64\ndefault_worker = "codex"\n` +
        `[workers.codex]\ncommand = ${JSON.stringify([FAKE])}\nauth = "none"\n`,
    );
    return join(dir, 'home');
  };
  const laptop = host('laptop', 4);
  for (let i = 1; i <= runners; i++) homes.push(host(`runner-${i}`, 4));
  const engine = new Engine({ home: laptop });
  const procs: ChildProcess[] = [];
  try {
    for (const home of homes) procs.push(startCli(['run'], { home }));
    const active = () => (engine.db.prepare(`SELECT COUNT(*) AS n FROM runners WHERE state = 'active'`).get() as { n: number }).n;
    await until(() => active() === runners, 60_000, 'runners to register');
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i += 100) {
      const tasks = Array.from({ length: Math.min(100, TASKS - i) }, (_, j) => ({ objective: `trivial ${i + j}`, workspace: join(t.dir, 'laptop', 'api'), kind: 'explore' }));
      const r = (await runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, 'delegate_batch', { tasks })) as { tasks: { id: string }[] };
      ids.push(...r.tasks.map((x) => x.id));
    }
    const done = () => (engine.db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE status = 'completed'`).get() as { n: number }).n;
    await until(() => done() === TASKS, 300_000, `${TASKS} tasks to complete`, 20);
    const seconds = (performance.now() - started) / 1000;
    const placed = (engine.db.prepare(`SELECT payload FROM events WHERE type = 'fleet.placed'`).all() as { payload: string }[]).map((r) => JSON.parse(r.payload) as { claimMs: number; host: string });
    const per = new Map<string, number>();
    for (const p of placed) per.set(p.host, (per.get(p.host) ?? 0) + 1);
    const claims = placed.map((p) => p.claimMs);
    return { seconds, claimP50: pct(claims, 50), claimP95: pct(claims, 95), perRunner: [...per.entries()].sort().map(([h, n]) => `${h}: ${n}`).join(', ') };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p)));
    engine.close();
    t.cleanup();
  }
}

export async function run(): Promise<Figures> {
  const missing = await postgresUnavailable();
  if (missing) return { fleet: `skipped: ${missing}` };
  const pg = await startTestPostgres();
  try {
    const one = await drain(pg.url, 1);
    const three = await drain(pg.url, 3);
    return {
      [`${TASKS} trivial tasks, 1 runner × 4 slots (s)`]: one.seconds,
      [`${TASKS} trivial tasks, 3 runners × 4 slots (s)`]: three.seconds,
      'throughput 1 runner (tasks/s)': TASKS / one.seconds,
      'throughput 3 runners (tasks/s)': TASKS / three.seconds,
      'speed-up 3 vs 1': one.seconds / three.seconds,
      'claim p50 / p95, 1 runner (ms)': `${one.claimP50} / ${one.claimP95}`,
      'claim p50 / p95, 3 runners (ms)': `${three.claimP50} / ${three.claimP95}`,
      'tasks per runner (3 runners)': three.perRunner,
    };
  } finally {
    await pg.stop();
  }
}
