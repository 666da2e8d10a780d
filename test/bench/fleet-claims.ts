// Claim throughput, slot rows against the fleet-wide lock they replaced: C claimer processes
// (LIGHTWORKER_BENCH_CLAIMERS, default 1,4) claim from LIGHTWORKER_BENCH_CLAIM_TASKS (default 800) queued
// tasks on one PostgreSQL for LIGHTWORKER_BENCH_CLAIM_MS (default 2000), in two modes: `slots` (claimFleetTask
// as it is: the task row, then one slot row per limit, SKIP LOCKED) and `lock` (the same claim behind the one
// transaction-scoped advisory lock every claim took before, so `lock` does strictly more work). Every
// claim's transaction is held LIGHTWORKER_BENCH_CLAIM_HOLD_MS (default 10) longer: the round trips to a
// server on another machine, which a loopback server lacks (0 measures the bare claim, CPU-bound here).
// Nothing runs: a claimed task stays `starting`. Beside them, the floor in the same run: a bare `SELECT 1`
// loop on one connection. Figures: claims/s and p50/p95 per mode, slots ÷ lock, claims/s ÷ floor
// commits/s. `npm run bench fleet-claims` (~1 min; not in the default set).
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { postgresUnavailable, startTestPostgres } from '../helpers/postgres.js';
import { commitFloor, makeStatsDb } from '../helpers/pg-stats.js';

const CLAIMERS = (process.env.LIGHTWORKER_BENCH_CLAIMERS ?? '1,4').split(',').map(Number).filter((n) => n > 0);
const MS = Number(process.env.LIGHTWORKER_BENCH_CLAIM_MS ?? 2000);
const HOLD_MS = Number(process.env.LIGHTWORKER_BENCH_CLAIM_HOLD_MS ?? 10);
const TASKS = Number(process.env.LIGHTWORKER_BENCH_CLAIM_TASKS ?? 800);
const LOOP = fileURLToPath(new URL('./_claim-loop.ts', import.meta.url));
const RUN_TS = fileURLToPath(new URL('../../bin/run-ts.js', import.meta.url));
type Result = { claimed: number; busy: number; taken: number; ms: number[] };

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

function claimer(home: string, mode: string, startAt: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [RUN_TS, LOOP, home, mode, String(MS), String(startAt), String(HOLD_MS)], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`claimer failed: ${stderr.slice(-500)}`));
      else resolve(JSON.parse(stdout) as Result);
    });
  });
}

async function measure(serverUrl: string, mode: 'slots' | 'lock', n: number): Promise<{ perS: number; p50: number; p95: number; busy: number; floor: number }> {
  const stats = await makeStatsDb(serverUrl, 'lw_claims');
  const t = tempDir('lw-bench-claims-');
  try {
    // Eight repositories: a repository's limit is at most 256 tasks at once, and claimed tasks stay.
    const repos = Array.from({ length: 8 }, (_, i) => makeRepo(join(t.dir, `r${i}`)));
    const repoLines = repos.map((r, i) => `"r${i}" = "${r}"`).join(', ');
    const homes = Array.from({ length: n + 1 }, (_, i) => {
      const home = join(t.dir, `h${i}`);
      mkdirSync(home, { recursive: true });
      writeFileSync(join(home, 'config.toml'), `[store]\nurl = "${stats.url}"\nschema = "claims"\n[fleet]\nhost_id = "h${i}"\nrepos = { ${repoLines} }\nmax_concurrency = 100000\n[scheduler]\nper_repository = 256\nper_root = 256\n`);
      return home;
    });
    const engine = new Engine({ home: homes[0] });
    try {
      // More than the fleet can claim in the window, in batches (one root each).
      for (let i = 0; i < TASKS; i += 100) {
        const tasks = Array.from({ length: 100 }, (_, j) => ({ objective: `claim me ${i + j}`, workspace: repos[(i + j) % repos.length], kind: 'explore' }));
        await runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, 'delegate_batch', { tasks });
      }
    } finally {
      engine.close();
    }
    // Every claimer's start-up (tsx, the engine, registration) before the common start.
    const startAt = Date.now() + 4000 + 500 * n;
    const results = await Promise.all(homes.slice(1).map((h) => claimer(h, mode, startAt)));
    const floor = await commitFloor(stats.url, 1000);
    const ms = results.flatMap((r) => r.ms);
    return { perS: ms.length / (MS / 1000), p50: pct(ms, 50), p95: pct(ms, 95), busy: results.reduce((a, r) => a + r.busy, 0), floor: floor.commitsPerS };
  } finally {
    t.cleanup();
    await stats.close();
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const missing = await postgresUnavailable();
  if (missing) return { 'fleet-claims': `skipped: ${missing}` };
  const pg = await startTestPostgres();
  const out: Record<string, number | string> = {};
  try {
    for (const n of CLAIMERS) {
      const lock = await measure(pg.url, 'lock', n);
      const slots = await measure(pg.url, 'slots', n);
      out[`${n} claimers: claims/s lock → slots`] = `${lock.perS.toFixed(0)} → ${slots.perS.toFixed(0)} (×${(slots.perS / lock.perS).toFixed(2)})`;
      out[`${n} claimers: claim p50 / p95 ms lock → slots`] = `${lock.p50.toFixed(2)} / ${lock.p95.toFixed(2)} → ${slots.p50.toFixed(2)} / ${slots.p95.toFixed(2)}`;
      out[`${n} claimers: claims/s ÷ floor commits/s lock → slots`] = `${(lock.perS / lock.floor).toFixed(3)} → ${(slots.perS / slots.floor).toFixed(3)} (floor ${lock.floor.toFixed(0)}, ${slots.floor.toFixed(0)} commits/s)`;
      out[`${n} claimers: busy claims (held this instant) lock → slots`] = `${lock.busy} → ${slots.busy}`;
      process.stderr.write(Object.entries(out).filter(([k]) => k.startsWith(`${n} claimers:`)).map(([k, v]) => `  ${k}  ${v}\n`).join(''));
    }
    return out;
  } finally {
    await pg.stop();
  }
}
