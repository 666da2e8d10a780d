import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Client as PgClient } from 'pg';

const require = createRequire(import.meta.url);
const pg = require('pg') as typeof import('pg');

/**
 * Server-side figures for the fleet tests and bench: a database of its own per measurement (so
 * pg_stat_database counts that fleet's transactions only, not other test files' on the shared server),
 * its commit counter and its connections. Every statement outside a transaction commits too: a woken
 * runner's reads are counted like its writes.
 */
export interface StatsDb {
  /** The URL of the fresh database (for the homes' `[store] url`). */
  url: string;
  name: string;
  /** Transactions committed in the database so far (as the statistics collector has them). */
  commits(): Promise<number>;
  /** Connections to the database now, by LightWorker processes (application_name lightworker/…). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

export async function connect(url: string): Promise<PgClient> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

/** Create a database on the server at `url` and watch it from the server's `postgres` database. */
export async function makeStatsDb(url: string, prefix = 'lw_stats'): Promise<StatsDb> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = await connect(url);
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    async commits() {
      // The collector takes each backend's counts when it goes idle (at most once a second): a fresh
      // snapshot for every read.
      await admin.query('SELECT pg_stat_clear_snapshot()');
      const r = await admin.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = $1', [name]);
      return Number(r.rows[0]?.n ?? 0);
    },
    async connections() {
      const r = await admin.query(`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'lightworker/%'`, [name]);
      return Number(r.rows[0].n);
    },
    async close() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

/**
 * The floor for a commit rate and a round trip on this machine, now: `SELECT 1` in a loop on one
 * connection for `ms` (each one a commit). Returns commits per second and the median round trip (ms).
 */
export async function commitFloor(url: string, ms = 1000): Promise<{ commitsPerS: number; rttMs: number }> {
  const c = await connect(url);
  try {
    const lat: number[] = [];
    const end = performance.now() + ms;
    while (performance.now() < end) {
      const t = performance.now();
      await c.query('SELECT 1');
      lat.push(performance.now() - t);
    }
    lat.sort((a, b) => a - b);
    return { commitsPerS: lat.length / (ms / 1000), rttMs: lat[Math.floor(lat.length / 2)] };
  } finally {
    await c.end();
  }
}
