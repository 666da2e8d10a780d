// Fleet figures: N runner processes (each a home standing in for a host, with its own clone and 4 slots)
// on one PostgreSQL, for N in LIGHTWORKER_BENCH_FLEET_SIZES (default 1,4,16,32). Each size gets a fresh
// database, so the server's own counters (pg_stat_database.xact_commit, pg_stat_activity) are that
// fleet's alone. Idle: the runners registered, nothing queued, commits per second over
// LIGHTWORKER_BENCH_FLEET_IDLE_MS (default 4000). Busy: LIGHTWORKER_BENCH_FLEET_TASKS (default 4 per runner,
// at least 40) trivial tasks submitted at once and drained by the instant fake codex, for at most
// LIGHTWORKER_BENCH_FLEET_BUSY_MS (default 120000): tasks/s (completed ÷ submission to the last end), claims/s (first to last claim), claim p50/p95 (the `claimMs` each runner records in its
// `fleet.placed` event), and connections per runner. Beside them, the floor measured in the same run on
// the same server: a bare `SELECT 1` loop on one connection (commits/s and its round trip). Tasks orphaned
// and runners lost are counted: a runner starved of CPU misses its beats.
// LIGHTWORKER_BENCH_FLEET_RUNS (default 1; 3 gives min/median/max) repeats each size.
// `npm run bench fleet` (not in the default set). The throwaway server runs with fsync off.
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
import { postgresUnavailable, startTestPostgres } from '../helpers/postgres.js';
import { commitFloor, makeStatsDb } from '../helpers/pg-stats.js';

const FAKE = process.env.LIGHTWORKER_BENCH_CODEX ?? fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));
const SIZES = (process.env.LIGHTWORKER_BENCH_FLEET_SIZES ?? '1,4,16,32').split(',').map(Number).filter((n) => n > 0);
const RUNS = Math.max(1, Number(process.env.LIGHTWORKER_BENCH_FLEET_RUNS ?? 1));
const IDLE_MS = Number(process.env.LIGHTWORKER_BENCH_FLEET_IDLE_MS ?? 4000);
const BUSY_MS = Number(process.env.LIGHTWORKER_BENCH_FLEET_BUSY_MS ?? 120_000);
const tasksFor = (n: number) => Number(process.env.LIGHTWORKER_BENCH_FLEET_TASKS ?? Math.max(40, 4 * n));
type Figures = Record<string, number | string>;

interface Sample {
  idleCommitsPerS: number;
  idlePerRunner: number;
  connPerRunner: number;
  tasksPerS: number;
  claimsPerS: number;
  claimP50: number;
  claimP95: number;
  floorCommitsPerS: number;
  floorRttMs: number;
  /** Tasks orphaned and runners marked lost during the busy phase (a runner starved past its lease). */
  orphaned: number;
  lost: number;
  /** Tasks still not ended when the busy phase's time ran out. */
  unfinished: number;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

async function measure(serverUrl: string, runners: number): Promise<Sample> {
  const stats = await makeStatsDb(serverUrl, 'lw_bench');
  const t = tempDir('lw-bench-fleet-');
  const store = `[store]\nurl = "${stats.url}"\nschema = "bench"\n`;
  const origin = makeRepo(join(t.dir, 'origin'));
  const host = (name: string) => {
    const dir = join(t.dir, name);
    mkdirSync(join(dir, 'home'), { recursive: true });
    execFileSync('git', ['clone', '-q', origin, join(dir, 'api')]);
    writeFileSync(
      join(dir, 'home', 'config.toml'),
      `${store}[fleet]\nhost_id = "${name}"\nrepos = { "api" = "${join(dir, 'api')}" }\nmax_concurrency = 100000\n` +
        `[scheduler]\nmax_concurrency = 4\nper_repository = 256\nper_root = 256\ndefault_worker = "codex"\n` +
        `[workers.codex]\ncommand = ${JSON.stringify([FAKE])}\nauth = "none"\n`,
    );
    return join(dir, 'home');
  };
  const laptop = host('laptop');
  const homes = Array.from({ length: runners }, (_, i) => host(`runner-${i + 1}`));
  // The submitting engine opens (and migrates) the schema before any runner starts, then closes: idle
  // figures are the runners' alone.
  new Engine({ home: laptop }).close();
  const procs: ChildProcess[] = [];
  const admin = new Engine({ home: laptop });
  try {
    for (const home of homes) {
      const p = startCli(['run'], { home });
      p.stdout?.resume();
      p.stderr?.resume();
      procs.push(p);
    }
    const active = () => (admin.db.prepare(`SELECT COUNT(*) AS n FROM runners WHERE state = 'active'`).get() as { n: number }).n;
    await until(() => active() === runners, 180_000, 'runners to register', 200);
    admin.close();
    // Settle (each runner's start-up sweep), then count the idle window.
    await new Promise((r) => setTimeout(r, 1500));
    const conns = await stats.connections();
    const c0 = await stats.commits();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const idleCommitsPerS = ((await stats.commits()) - c0) / ((performance.now() - t0) / 1000);
    const floor = await commitFloor(stats.url, 1000);

    const engine = new Engine({ home: laptop });
    try {
      const total = tasksFor(runners);
      const started = performance.now();
      for (let i = 0; i < total; i += 100) {
        const tasks = Array.from({ length: Math.min(100, total - i) }, (_, j) => ({ objective: `trivial ${i + j}`, workspace: join(t.dir, 'laptop', 'api'), kind: 'explore' }));
        await runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, 'delegate_batch', { tasks });
      }
      const ended = () => (engine.db.prepare(`SELECT COUNT(*) AS n FROM tasks WHERE status IN ('completed', 'failed', 'orphaned')`).get() as { n: number }).n;
      await until(() => ended() === total, BUSY_MS, `${total} tasks to end`, 50).catch(() => undefined);
      const seconds = (performance.now() - started) / 1000;
      const count = (sql: string) => (engine.db.prepare(sql).get() as { n: number }).n;
      const completed = count(`SELECT COUNT(*) AS n FROM tasks WHERE status = 'completed'`);
      const orphaned = count(`SELECT COUNT(*) AS n FROM tasks WHERE status = 'orphaned'`);
      const lost = count(`SELECT COUNT(*) AS n FROM runners WHERE state = 'lost'`);
      const placed = (engine.db.prepare(`SELECT ts, payload FROM events WHERE type = 'fleet.placed' ORDER BY ts`).all() as { ts: number; payload: string }[]).map((r) => ({
        ts: r.ts,
        claimMs: (JSON.parse(r.payload) as { claimMs: number }).claimMs,
      }));
      const span = placed.length > 1 ? (placed[placed.length - 1].ts - placed[0].ts) / 1000 : NaN;
      return {
        idleCommitsPerS,
        idlePerRunner: idleCommitsPerS / runners,
        connPerRunner: conns / runners,
        tasksPerS: completed / seconds,
        orphaned,
        lost,
        unfinished: total - ended(),
        claimsPerS: placed.length / span,
        claimP50: pct(placed.map((p) => p.claimMs), 50),
        claimP95: pct(placed.map((p) => p.claimMs), 95),
        floorCommitsPerS: floor.commitsPerS,
        floorRttMs: floor.rttMs,
      };
    } finally {
      engine.close();
    }
  } finally {
    if (admin.db.open) admin.close();
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p)));
    t.cleanup();
    await stats.close();
  }
}

/** min / median / max of one figure over the runs (one value when there was one run). */
function spread(xs: number[], digits = 1): string {
  const s = [...xs].sort((a, b) => a - b);
  const f = (v: number) => (Number.isFinite(v) ? v.toFixed(digits) : '—');
  return s.length === 1 ? f(s[0]) : `${f(s[0])} / ${f(s[Math.floor(s.length / 2)])} / ${f(s[s.length - 1])}`;
}

export async function run(): Promise<Figures> {
  const missing = await postgresUnavailable();
  if (missing) return { fleet: `skipped: ${missing}` };
  const pg = await startTestPostgres();
  const out: Figures = {};
  try {
    for (const n of SIZES) {
      const samples: Sample[] = [];
      for (let r = 0; r < RUNS; r++) samples.push(await measure(pg.url, n));
      const col = (k: keyof Sample, d = 1) => spread(samples.map((s) => s[k]), d);
      const ratio = (f: (s: Sample) => number, d = 3) => spread(samples.map(f), d);
      out[`${n} runners: idle commits/s (per runner)`] = `${col('idleCommitsPerS')} (${col('idlePerRunner', 2)})`;
      out[`${n} runners: connections per runner`] = col('connPerRunner', 2);
      out[`${n} runners: tasks/s, claims/s`] = `${col('tasksPerS')}, ${col('claimsPerS')}`;
      out[`${n} runners: floor commits per claim`] = `${ratio((s) => s.floorCommitsPerS / s.claimsPerS, 0)} (floor ${col('floorCommitsPerS', 0)} commits/s)`;
      out[`${n} runners: claim p50 / p95 (ms)`] = `${col('claimP50', 2)} / ${col('claimP95', 2)}`;
      out[`${n} runners: claim p50 ÷ floor round trip`] = `${ratio((s) => s.claimP50 / s.floorRttMs, 1)} (floor ${col('floorRttMs', 3)} ms)`;
      out[`${n} runners: orphaned tasks, lost runners, unfinished`] = `${col('orphaned', 0)}, ${col('lost', 0)}, ${col('unfinished', 0)}`;
      process.stderr.write(Object.entries(out).filter(([k]) => k.startsWith(`${n} runners:`)).map(([k, v]) => `  ${k}  ${v}\n`).join(''));
    }
    return out;
  } finally {
    await pg.stop();
  }
}
