// What the fleet scenario (fleet-pg.ts) measures from outside the runners: the side log of worker beats, the
// store password's places (store cells, files, stderr, workers' environments).
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { FleetHosts } from '../helpers/fleet-hosts.js';
import type { TestPostgres } from '../helpers/postgres.js';
import type { TcpProxy } from '../helpers/tcp-proxy.js';
import { isAlive } from '../helpers/procs.js';
import { storedCells } from '../helpers/store-dump.js';
import type { Rng } from './rng.js';
import type { DiskFigures } from './fleet-pg-disk.js';

export const HOSTS = ['host-a', 'host-b', 'host-c'];

export type FaultKind = 'kill' | 'freeze' | 'cut' | 'blackhole' | 'server restart' | 'full disk';

export interface FleetPgFigures {
  faults: Record<FaultKind, number>;
  tasks: number;
  attempts: number;
  doubleRuns: number;
  overlaps: { task: string; ms: number }[];
  lostTasks: number;
  stuckTasks: number;
  survivors: number;
  leaks: number;
  /** Live workers whose environment was searched for the password. */
  workerEnvsSearched: number;
  /** Per orphaned task: ms from its fault to the first side-log beat of its next attempt. */
  recoveryMs: number[];
  recoveryTimeouts: number;
  /** Tasks that lost their runner more than AUTO_RESUME_LIMIT times, left orphaned for a person: retried here by hand. */
  leftAtLimit: string[];
  /** The server's disk filled under running work (fleet-pg-disk.ts). */
  disk: DiskFigures;
  notes: string[];
}

export interface Held {
  id: string;
  attempt: number;
}

export interface Ctx {
  fleet: FleetHosts;
  pg: TestPostgres;
  proxies: Record<string, TcpProxy>;
  env: Record<string, string>;
  children: ChildProcess[];
  ids: string[];
  rng: Rng;
  figures: FleetPgFigures;
  log: (l: string) => void;
  /** Worker pids whose environment was already searched for the password. */
  seenWorkers: Set<string>;
  secret: string;
  /** Tasks the scenario cancelled: not lost when they end cancelled. */
  cancelled: Set<string>;
}

/**
 * Live workers of the side log: a beat's pid still carrying that task's marker (pids wrap quickly on a busy
 * machine, so a dead worker's pid may belong to anything since, a restarted runner or another user's process).
 */
export function liveWorkers(c: Ctx): { pid: number; task: string; environ: string }[] {
  const out = new Map<number, { pid: number; task: string; environ: string }>();
  for (const b of c.fleet.beats()) {
    if (out.has(b.pid) || !isAlive(b.pid)) continue;
    try {
      const environ = readFileSync(`/proc/${b.pid}/environ`, 'latin1');
      if (environ.split('\0').includes(`LIGHTWORKER_TASK_ID=${b.task}`)) out.set(b.pid, { pid: b.pid, task: b.task, environ });
    } catch {
      // ended meanwhile
    }
  }
  return [...out.values()];
}

/** The password must not reach a worker: each live worker's environment is read once. */
export function searchWorkerEnvs(c: Ctx): void {
  for (const w of liveWorkers(c)) {
    const key = `${w.pid} ${w.task}`;
    if (c.seenWorkers.has(key)) continue;
    c.seenWorkers.add(key);
    c.figures.workerEnvsSearched++;
    if (w.environ.includes(c.secret)) {
      c.figures.leaks++;
      c.figures.notes.push(`leak: the store password is in the environment of worker ${w.pid} (task ${w.task})`);
    }
  }
}

function filesHolding(dir: string, secret: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) out.push(...filesHolding(p, secret));
    else if (st.isFile() && st.size < 64 * 1024 * 1024 && readFileSync(p, 'latin1').includes(secret)) out.push(p);
  }
  return out;
}

export function countLeaks(c: Ctx): void {
  const places = [
    ...storedCells(c.fleet.laptop.db).filter((x) => x.text.includes(c.secret)).map((x) => `store ${x.where}`),
    ...filesHolding(c.fleet.dir, c.secret).map((f) => `file ${f}`),
    ...HOSTS.filter((h) => c.fleet.stderr[h]?.().includes(c.secret)).map((h) => `${h} runner's stderr`),
  ];
  c.figures.leaks += places.length;
  for (const p of places) c.figures.notes.push(`leak: the store password in ${p}`);
}

/** Side-log figures: (task, attempt) pairs run by more than one process, and attempts of a task alive at once. */
export function measureBeats(c: Ctx): void {
  const pids = new Map<string, Set<number>>();
  for (const b of c.fleet.beats()) {
    const k = `${b.task} ${b.attempt}`;
    pids.set(k, (pids.get(k) ?? new Set()).add(b.pid));
  }
  c.figures.attempts = pids.size;
  c.figures.doubleRuns = [...pids.values()].filter((s) => s.size > 1).length;
  c.figures.overlaps = c.fleet.overlaps();
  for (const o of c.figures.overlaps) c.figures.notes.push(`overlap: two attempts of ${o.task} alive at once for ${o.ms} ms`);
}

