import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { startCli } from './cli.js';
import { makeRepo } from './env.js';
import { captureStderr, exited, isAlive } from './procs.js';
import { storeConfigFor } from './postgres.js';

/**
 * A small fleet on the test PostgreSQL for the partition tests: runner homes standing in for hosts (each
 * its own `[fleet] host_id` and its own clone of one repository, `api`), optionally reaching the server
 * through a proxy port, and a "laptop" engine that submits and watches. Workers write a beat log (mock
 * `beat_log`) from which overlapping attempts of one task are measured.
 */
export interface FleetHosts {
  dir: string;
  laptop: Engine;
  homes: Record<string, string>;
  runners: Record<string, ChildProcess>;
  stderr: Record<string, () => string>;
  beatLog: string;
  start(name: string, env?: Record<string, string>): ChildProcess;
  call(name: string, input: unknown): Promise<any>;
  submit(n: number, mock: Record<string, unknown>): Promise<string[]>;
  status(id: string): { status: string; attempt: number; runnerId: string | null };
  runnerOf(host: string): { id: string; state: string } | undefined;
  hostOfRunner(id: string | null): string | null;
  overlaps(): { task: string; ms: number }[];
  beats(): Beat[];
  close(): Promise<void>;
}

export interface Beat {
  task: string;
  attempt: number;
  pid: number;
  at: number;
}

export interface FleetHostOptions {
  hosts: string[];
  /** Per host: the server port to use instead of the real one (a proxy). */
  portOf?: (host: string) => number | undefined;
  /** Per host: its lease (default 1500 ms). A runner that must stay healthy on a loaded machine gets a longer one. */
  leaseOf?: (host: string) => number | undefined;
  extra?: string;
  /** Per host: its `[store] key_file` (default: each home's own secret.key). */
  keyFileOf?: (host: string) => string | undefined;
  /** `[scheduler] auto_resume_orphans` (default false here: these tests orphan tasks and resume them by hand). */
  autoResume?: boolean;
}

export function makeFleetHosts(dir: string, url: string, opts: FleetHostOptions): FleetHosts {
  const store = storeConfigFor(url);
  const realPort = new URL(url).port;
  const origin = makeRepo(join(dir, 'origin', 'api'));
  const beatLog = join(dir, 'beats.log');
  const homes: Record<string, string> = {};
  const runners: Record<string, ChildProcess> = {};
  const stderr: Record<string, () => string> = {};
  for (const name of ['laptop', ...opts.hosts]) {
    const home = join(dir, name, 'home');
    const clone = join(dir, name, 'src', 'api');
    mkdirSync(join(dir, name, 'src'), { recursive: true });
    mkdirSync(home, { recursive: true });
    execFileSync('git', ['clone', '-q', origin, clone]);
    const port = opts.portOf?.(name);
    const keyFile = opts.keyFileOf?.(name);
    const storeHere = (port ? store.replace(`:${realPort}/`, `:${port}/`) : store).replace(/^\[store\]\n/, keyFile ? `[store]\nkey_file = "${keyFile}"\n` : '[store]\n');
    writeFileSync(
      join(home, 'config.toml'),
      `${storeHere}[fleet]\nhost_id = "${name}"\nrepos = { "api" = "${clone}" }\nlease_ttl_ms = ${opts.leaseOf?.(name) ?? 1500}\n` +
        `[scheduler]\nmax_concurrency = 4\nper_root = 64\nper_repository = 16\nkill_grace_ms = 300\nauto_resume_orphans = ${opts.autoResume ?? false}\n${opts.extra ?? ''}`,
    );
    homes[name] = home;
  }
  const laptop = new Engine({ home: homes.laptop });
  const clone = join(dir, 'laptop', 'src', 'api');
  const call = (name: string, input: unknown) => runCommand(COMMANDS, { engine: laptop, face: 'cli', depth: 0 }, name, input);
  const beats = (): Beat[] =>
    existsSync(beatLog)
      ? readFileSync(beatLog, 'utf8').split('\n').filter((l) => l.split(' ').length === 4).map((l) => {
          const [task, attempt, pid, at] = l.split(' ');
          return { task, attempt: Number(attempt), pid: Number(pid), at: Number(at) };
        })
      : [];
  return {
    dir,
    laptop,
    homes,
    runners,
    stderr,
    beatLog,
    start(name, env = {}) {
      const child = startCli(['run'], { home: homes[name], env });
      runners[name] = child;
      stderr[name] = captureStderr(child);
      return child;
    },
    call,
    async submit(n, mock) {
      const tasks = Array.from({ length: n }, (_, i) => ({ objective: `api task ${i}`, workspace: clone, metadata: { mock: { beat_log: beatLog, ...mock } } }));
      const r = (await call('delegate_batch', { tasks })) as { tasks: { id: string }[] };
      return r.tasks.map((x) => x.id);
    },
    status(id) {
      return laptop.db.prepare('SELECT status, attempt, runner_id AS "runnerId" FROM tasks WHERE id = ?').get(id) as { status: string; attempt: number; runnerId: string | null };
    },
    runnerOf(host) {
      return laptop.db.prepare(`SELECT id, state FROM runners WHERE host = ? ORDER BY started_at DESC LIMIT 1`).get(host) as { id: string; state: string } | undefined;
    },
    hostOfRunner(id) {
      if (!id) return null;
      return (laptop.db.prepare('SELECT host FROM runners WHERE id = ?').get(id) as { host: string } | undefined)?.host ?? null;
    },
    beats,
    overlaps() {
      return measureOverlaps(beats());
    },
    async close() {
      for (const c of Object.values(runners)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await Promise.all(Object.values(runners).map((c) => exited(c)));
      for (const pid of new Set(beats().map((b) => b.pid))) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      laptop.close();
    },
  };
}

/**
 * Pairs of attempts of one task that were alive at once, by their beats: attempt a's last beat after
 * attempt b's first (b > a). `ms` is by how much.
 */
export function measureOverlaps(beats: Beat[]): { task: string; ms: number }[] {
  const span = new Map<string, Map<number, { first: number; last: number }>>();
  for (const b of beats) {
    const byAttempt = span.get(b.task) ?? new Map<number, { first: number; last: number }>();
    span.set(b.task, byAttempt);
    const s = byAttempt.get(b.attempt);
    if (!s) byAttempt.set(b.attempt, { first: b.at, last: b.at });
    else [s.first, s.last] = [Math.min(s.first, b.at), Math.max(s.last, b.at)];
  }
  const out: { task: string; ms: number }[] = [];
  for (const [task, byAttempt] of span) {
    const list = [...byAttempt.entries()].sort((x, y) => x[0] - y[0]);
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const ms = list[i][1].last - list[j][1].first;
        if (ms > 0) out.push({ task, ms });
      }
    }
  }
  return out;
}
