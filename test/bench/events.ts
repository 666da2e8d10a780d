// Event inserts per second against one PostgreSQL with 1 writer process vs 3 (the event log
// must not serialize the fleet), each writer appending one event per transaction to its own tasks' chains
// as runners do; the same with every event on one chain (the system chain ''), which is what the old
// single global chain amounted to; SQLite for reference; and `audit verify` over the log. Twice: bare
// inserts (on a small machine these are CPU-bound, every writer process competing for the same cores),
// and with each transaction held open 2 ms after its insert, standing for the rest of a runner's
// transaction: that shows what a shared head row costs, since its lock is held until commit.
// ~70 s (process starts included): not in the default set. `node bin/run-ts.js test/bench/run.ts events`.
// The throwaway server runs with fsync off (test/helpers/postgres.ts), so these are CPU/lock figures.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openDb, type Db } from '../../main/store/db.js';
import { verifyAudit } from '../../main/store/events.js';
import { openPgDb } from '../../main/store/pg/open.js';
import { tempDir } from '../helpers/env.js';
import { runWriters } from '../helpers/event-writers.js';
import { postgresUnavailable, startTestPostgres } from '../helpers/postgres.js';

const MS = 3000;
/** Milliseconds each transaction stays open after its insert, in the second round. */
const HOLD = 2;
/** Chains each writer cycles over (its "tasks"); 0: every event on the one system chain. */
const OWN_TASKS = 10;

type Figures = Record<string, number | string>;

/** Run `writers` bench processes on a fresh store; inserts/s over all, retried transactions, and verify's cost. */
async function measure(open: () => Db, store: string, writers: number, chains: number, hold = 0): Promise<{ perSec: number; retries: number; events: number; verifyMs: number }> {
  open().close(); // migrate before the clock starts
  const out = await runWriters(store, Array.from({ length: writers }, (_, i) => ({ name: `w${i + 1}`, mode: 'bench' as const, args: [MS, chains, hold] })));
  const inserts = out.reduce((s, o) => s + o.inserts, 0);
  const ms = Math.max(...out.map((o) => o.ms));
  const db = open();
  try {
    const t = performance.now();
    const v = verifyAudit(db);
    const verifyMs = performance.now() - t;
    if (!v.ok || v.checked !== inserts) throw new Error(`audit verify after the run: ${JSON.stringify(v)} (expected ${inserts} events)`);
    return { perSec: (inserts / ms) * 1000, retries: out.reduce((s, o) => s + o.attempts - o.inserts, 0), events: inserts, verifyMs };
  } finally {
    db.close();
  }
}

export async function run(): Promise<Figures> {
  const figures: Figures = {};
  const missing = await postgresUnavailable();
  if (missing) figures['postgres'] = `skipped: ${missing}`;
  else {
    const pg = await startTestPostgres();
    try {
      const scenarios = [
        ['per-task chains', OWN_TASKS, 0],
        ['one global chain', 0, 0],
        [`per-task chains, tx held ${HOLD} ms`, OWN_TASKS, HOLD],
        [`one global chain, tx held ${HOLD} ms`, 0, HOLD],
      ] as const;
      for (const [label, chains, hold] of scenarios) {
        const runs = [];
        for (const writers of [1, 3]) {
          const schema = `bench_${randomBytes(4).toString('hex')}`;
          const open = () => openPgDb({ url: pg.url, schema, label: `bench (schema ${schema})`, source: 'bench' });
          const r = await measure(open, `pg:${schema}:${pg.url}`, writers, chains, hold);
          runs.push(r);
          figures[`pg ${label}, ${writers} writer${writers > 1 ? 's' : ''}, inserts/s`] = r.perSec;
          if (writers > 1) figures[`pg ${label}, ${writers} writers, retried tx`] = r.retries;
        }
        figures[`pg ${label}, 3 vs 1 writers, ×`] = runs[1].perSec / runs[0].perSec;
        if (chains && !hold) figures[`pg audit verify, events/s (${runs[1].events} events)`] = (runs[1].events / runs[1].verifyMs) * 1000;
      }
    } finally {
      await pg.stop();
    }
  }
  const { dir, cleanup } = tempDir('lw-bench-events-');
  try {
    for (const writers of [1, 3]) {
      const path = join(dir, `events-${writers}.db`);
      const r = await measure(() => openDb({ path }), `sqlite:${path}`, writers, OWN_TASKS);
      figures[`sqlite per-task chains, ${writers} writer${writers > 1 ? 's' : ''}, inserts/s`] = r.perSec;
      if (writers === 1) figures[`sqlite audit verify, events/s (${r.events} events)`] = (r.events / r.verifyMs) * 1000;
      rmSync(path, { force: true });
    }
  } finally {
    cleanup();
  }
  return figures;
}
