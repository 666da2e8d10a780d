// Scheduler figures (issues 3 and 13), with the instant fake worker (test/fixtures/instant-codex.sh run as
// the codex adapter's binary through config.toml `[workers.codex] command`), so every figure is
// LightWorker's own overhead. The leader is the shipped CLI (`lightworker run`, built bundle) in its own
// process, started as an MCP session starts its background runner (with LEADER_V8_FLAGS; a `lightworker
// run` typed by hand lacks them: see LEADER_V8_FLAGS for what each saves); the bench process plays the other process
// (submitting, waiting). Wall-clock figures are
// noisy on a busy machine: CPU (from /proc) and counts are the steadier ones.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuild } from '../../scripts/build-state.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { loadConfig } from '../../main/core/config.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { leaderEnv, leaderExecArgv } from '../../main/scheduler/background.js';
import { BIN, startCli } from '../helpers/cli.js';
import { makeHome, tempDir, type TestHome } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';

export const FAKE = process.env.LIGHTWORKER_BENCH_CODEX ?? fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));
const DRAIN = Number(process.env.LIGHTWORKER_BENCH_DRAIN ?? 200);
const LONE = Number(process.env.LIGHTWORKER_BENCH_LONE ?? 30);
const WAITING = Number(process.env.LIGHTWORKER_BENCH_WAITING ?? 10_000);
type Figures = Record<string, number | string>;
const TICK_MS = 10; // /proc/PID/stat counts CPU in clock ticks (100 per second)

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/**
 * A home whose codex worker is the instant fake, concurrency 4 in one repository. With `log`, the fake
 * logs its start and end times there (through `env`, one exec more per task: the worker gets a minimal
 * environment).
 */
export function benchHome(log: string | null): TestHome {
  const h = makeHome();
  const command = log ? ['env', `INSTANT_CODEX_LOG=${log}`, FAKE] : [FAKE];
  writeFileSync(
    h.engine.home.config,
    `[scheduler]\nmax_concurrency = 4\nper_repository = 4\nper_root = 4\ndefault_worker = "codex"\n` +
      `[workers.codex]\ncommand = ${JSON.stringify(command)}\nauth = "none"\n`,
  );
  h.engine.config = loadConfig(h.engine.home.config);
  return h;
}

/** CPU time (user + system, ms) of a live process from /proc/PID/stat; throws once it is gone. */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

/** The leader's spawner helper (platform/proc/spawner.ts), once it runs: a child whose command line names it. */
function findSpawner(leader: number): number | null {
  let children: string[];
  try {
    // The main thread forks it (a cheap read; needs CONFIG_PROC_CHILDREN, else every process's parent is read).
    children = readFileSync(`/proc/${leader}/task/${leader}/children`, 'utf8').split(' ').filter(Boolean);
  } catch {
    children = readdirSync('/proc').filter((e) => /^\d+$/.test(e) && parentOf(Number(e)) === leader);
  }
  for (const pid of children) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('spawner-helper')) return Number(pid);
    } catch {
      // gone
    }
  }
  return null;
}

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/**
 * CPU time (user + system, ms), peak RSS (VmHWM, KiB) and peak private memory (anonymous pages, KiB: RSS
 * less the node executable's and libraries' shared file pages, ~40 MiB of any node process) of a live
 * process, sampled until stop(). The leader's spawner helper forks for it (worker turns, git): its CPU is
 * the leader's work done elsewhere, so it is added to the leader's; its memory is reported apart.
 */
export function watchProcess(pid: number) {
  let cpuMs = 0;
  let hwmKiB = 0;
  let anonKiB = 0;
  let spawner: number | null = null;
  let spawnerCpuMs = 0;
  let spawnerHwmKiB = 0;
  let spawnerAnonKiB = 0;
  let n = 0;
  const anonOf = (p: number) => Number(/^Anonymous:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  const hwmOf = (p: number) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
  const sample = () => {
    const slow = n++ % 10 === 0;
    if (slow) {
      try {
        anonKiB = Math.max(anonKiB, anonOf(pid));
      } catch {
        // exited, or no smaps_rollup (kernel < 4.14)
      }
      spawner ??= findSpawner(pid);
    }
    try {
      cpuMs = cpuMsOf(pid);
      hwmKiB = Math.max(hwmKiB, hwmOf(pid));
    } catch {
      // exited: keep the last sample
    }
    if (spawner) {
      try {
        spawnerCpuMs = cpuMsOf(spawner);
        spawnerHwmKiB = Math.max(spawnerHwmKiB, hwmOf(spawner));
        if (slow) spawnerAnonKiB = Math.max(spawnerAnonKiB, anonOf(spawner));
      } catch {
        // exited with its leader
      }
    }
  };
  const figures = () => ({ cpuMs: cpuMs + spawnerCpuMs, hwmKiB, anonKiB, spawnerCpuMs, spawnerHwmKiB, spawnerAnonKiB });
  sample();
  const timer = setInterval(sample, 5);
  return {
    now: () => (sample(), figures()),
    stop: () => (clearInterval(timer), figures()),
  };
}

/** Start/end times (epoch ms) of each fake worker run, by the task id in its last-message path. */
function fakeRuns(log: string): Map<string, { start: number; end: number }> {
  const runs = new Map<string, { start: number; end: number }>();
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return runs;
  }
  for (const line of text.split('\n')) {
    const [kind, at, , tag] = line.split(' ');
    const id = /artifacts\/([0-9A-Z]{26})\//.exec(tag ?? '')?.[1];
    if (!id) continue;
    const r = runs.get(id) ?? { start: NaN, end: NaN };
    if (kind === 'S') r.start = Number(at) * 1000;
    if (kind === 'E') r.end = Number(at) * 1000;
    runs.set(id, r);
  }
  return runs;
}

export const call = (h: TestHome, name: string, input: unknown) => runCommand(COMMANDS, { engine: h.engine, face: 'cli', depth: 0 }, name, input) as Promise<any>;

/** A leader as LightWorker starts one in the background for an MCP session (its V8 flags included). */
export function startLeader(args: string[], h: TestHome): ChildProcess {
  // As installed: the bundle is current (ensureBuild in run()), so no source-hash check at each start; the
  // environment LightWorker gives a background leader on this SQLite home.
  const env = { ...leaderEnv(process.env, { tls: false }), LIGHTWORKER_HOME: h.home, LIGHTWORKER_NO_BUILD_CHECK: '1' };
  return spawn(process.execPath, [...leaderExecArgv([]), BIN, ...args], { env, stdio: 'ignore' });
}

/** A `run --until-idle` leader over `h` to its exit: wall ms, CPU ms (its spawner's included), peak RSS KiB. */
export async function leadUntilIdle(h: TestHome): Promise<{ wallMs: number } & ReturnType<ReturnType<typeof watchProcess>['stop']>> {
  const t = performance.now();
  const leader = startLeader(['run', '--until-idle'], h);
  const w = watchProcess(leader.pid!);
  const code = await exited(leader);
  const wallMs = performance.now() - t;
  const figures = w.stop();
  if (code !== 0) throw new Error(`run --until-idle exited ${code}`);
  return { wallMs, ...figures };
}

/** Drains measured; each figure is their median (RSS: the highest). */
const DRAIN_RUNS = Number(process.env.LIGHTWORKER_BENCH_DRAIN_RUNS ?? 3);

/** One measured drain of DRAIN trivial tasks over `h`: the leader's run, and first claim to last completion. */
export async function drainOnce(h: TestHome, n = DRAIN): Promise<{ run: Awaited<ReturnType<typeof leadUntilIdle>>; claimToEndMs: number }> {
  const ids: string[] = [];
  for (let b = 0; b < n / 4; b++) {
    const r = await call(h, 'delegate_batch', { tasks: Array.from({ length: 4 }, (_, i) => ({ objective: `t${b}.${i}`, workspace: h.repo, kind: 'explore' })) });
    ids.push(...r.tasks.map((x: { id: string }) => x.id));
  }
  const run = await leadUntilIdle(h);
  const res = await waitTasks(h.engine, ids, 1000);
  if (res.counts.completed !== n) throw new Error(`drain: ${JSON.stringify(res.counts)}`);
  const status = listEvents(h.engine.db, { types: ['task.status'], limit: 100_000 }).events;
  const first = Math.min(...status.filter((e) => e.payload.to === 'starting').map((e) => e.ts));
  const last = Math.max(...status.filter((e) => e.payload.to === 'completed').map((e) => e.ts));
  return { run, claimToEndMs: last - first };
}

async function drain(figures: Figures): Promise<void> {
  // Homes are removed after the last run: a removal's freed inodes slow the next runs' file creation on some
  // file systems (see fileCreateMicros), and that is not LightWorker's cost.
  const homes: TestHome[] = [];
  try {
    // The fixed cost of a leader (start, open, lease, nothing to do, exit), to take out of the per-task CPU.
    const idle = benchHome(null);
    homes.push(idle);
    const base = await leadUntilIdle(idle);
    const runs: Awaited<ReturnType<typeof drainOnce>>[] = [];
    for (let i = 0; i < DRAIN_RUNS; i++) {
      const h = benchHome(null);
      homes.push(h);
      runs.push(await drainOnce(h));
    }
    const med = (f: (r: (typeof runs)[number]) => number) => pct(runs.map(f), 50);
    const top = (f: (r: (typeof runs)[number]) => number) => Math.max(...runs.map(f));
    figures[`drain ${DRAIN} explore tasks @4, leader start to exit, s`] = med((r) => r.run.wallMs) / 1000;
    figures[`drain ${DRAIN}: first claim to last completion, s`] = med((r) => r.claimToEndMs) / 1000;
    figures[`drain ${DRAIN}, each of ${DRAIN_RUNS} runs: leader start to exit, s`] = runs.map((r) => (r.run.wallMs / 1000).toFixed(2)).join(' / ');
    figures['leader CPU per task (workers excluded), ms'] = med((r) => (r.run.cpuMs - base.cpuMs) / DRAIN);
    figures[`leader CPU per task, each of ${DRAIN_RUNS} runs, ms`] = runs.map((r) => ((r.run.cpuMs - base.cpuMs) / DRAIN).toFixed(2)).join(' / ');
    figures['  of which its spawner helper, ms'] = med((r) => r.run.spawnerCpuMs / DRAIN);
    figures['leader CPU of an idle run --until-idle (subtracted), ms'] = base.cpuMs;
    figures[`leader peak RSS, ${DRAIN} tasks, MiB`] = top((r) => r.run.hwmKiB) / 1024;
    figures[`leader peak private (anonymous) memory, ${DRAIN} tasks, MiB`] = top((r) => r.run.anonKiB) / 1024;
    figures['idle leader peak RSS / private, MiB'] = `${(base.hwmKiB / 1024).toFixed(1)} / ${(base.anonKiB / 1024).toFixed(1)}`;
    figures['spawner helper peak RSS / private (beside the leader), MiB'] = `${(top((r) => r.run.spawnerHwmKiB) / 1024).toFixed(1)} / ${(top((r) => r.run.spawnerAnonKiB) / 1024).toFixed(1)}`;
  } finally {
    for (const h of homes) h.cleanup();
  }
}

/** `n` lone tasks, one at a time, on a running leader: created → worker started, worker exit → wait returned here. */
async function lone(h: TestHome, log: string, n: number): Promise<{ spawn: number[]; wait: number[]; running: number[]; completed: number[] }> {
  const completed: number[] = [];
  const spawn: number[] = [];
  const wait: number[] = [];
  const running: number[] = [];
  for (let i = 0; i < n; i++) {
    const { task } = await call(h, 'delegate_task', { objective: `lone ${i}`, workspace: h.repo, kind: 'explore' });
    await waitTasks(h.engine, [task.id], 30_000);
    const returned = performance.timeOrigin + performance.now();
    const r = fakeRuns(log).get(task.id);
    if (!r) throw new Error(`lone task ${task.id} did not run the fake (${(await call(h, 'get_task', { id: task.id })).task.error?.message})`);
    spawn.push(r.start - task.createdAt);
    wait.push(returned - r.end);
    const ev = listEvents(h.engine.db, { taskId: task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'running');
    if (ev) running.push(ev.ts - task.createdAt);
    const done = listEvents(h.engine.db, { taskId: task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'completed');
    if (done) completed.push(done.ts - r.end);
  }
  return { spawn, wait, running, completed };
}

async function latency(figures: Figures): Promise<void> {
  const scratch = tempDir('lw-bench-log-');
  const log = join(scratch.dir, 'lone.log');
  const h = benchHome(log);
  let leader: ChildProcess | null = null;
  try {
    leader = startLeader(['run'], h);
    const w = watchProcess(leader.pid!);
    await until(() => Boolean(h.engine.db.prepare("SELECT 1 FROM leases WHERE expires_at > ?").get(Date.now())), 30_000, 'leader lease');
    await lone(h, log, 3); // warm-up: first git calls, first spawns
    const empty = await lone(h, log, LONE);
    figures['queued → worker spawned p50 (idle leader, other process submits), ms'] = pct(empty.spawn, 50);
    figures['queued → worker spawned p95, ms'] = pct(empty.spawn, 95);
    figures['worker exit → wait_tasks returns in another process p50, ms'] = pct(empty.wait, 50);
    figures['worker exit → wait_tasks returns p95, ms'] = pct(empty.wait, 95);
    figures['worker exit → task completed (leader) p50, ms'] = pct(empty.completed, 50);
    figures['created → running p50, empty queue, ms'] = pct(empty.running, 50);

    // WAITING tasks queued behind one approval: a new task's created → running must barely change.
    const gate = (await call(h, 'delegate_task', { objective: 'gate', workspace: h.repo, kind: 'execute' })).task;
    for (let done = 0; done < WAITING; done += 100) {
      const tasks = Array.from({ length: Math.min(100, WAITING - done) }, (_, i) => ({ objective: `held ${done + i}`, workspace: h.repo, kind: 'explore', depends_on: [gate.id] }));
      await call(h, 'delegate_batch', { tasks });
    }
    await lone(h, log, 3);
    const full = await lone(h, log, LONE);
    figures[`created → running p50, ${WAITING} tasks waiting, ms`] = pct(full.running, 50);
    figures[`${WAITING} waiting tasks add to created → running, %`] = (pct(full.running, 50) / pct(empty.running, 50) - 1) * 100;
    figures[`queued → worker spawned p50, ${WAITING} waiting, ms`] = pct(full.spawn, 50);
    const mem = w.now();
    figures[`leader peak RSS, ${WAITING} tasks in the database, MiB`] = mem.hwmKiB / 1024;
    figures[`leader peak private (anonymous) memory, ${WAITING} tasks in the database, MiB`] = mem.anonKiB / 1024;
    w.stop();
  } finally {
    if (leader) {
      leader.kill('SIGTERM');
      await exited(leader);
    }
    h.cleanup();
    scratch.cleanup();
  }
}

/** Cancel → task cancelled with its tree killed, across processes (the mock worker sleeps until killed). */
async function cancel(figures: Figures): Promise<void> {
  const h = makeHome();
  const leader = startCli(['run'], { home: h.home });
  try {
    const lat: number[] = [];
    for (let i = 0; i < 10; i++) {
      const { task } = await call(h, 'delegate_task', { objective: `c${i}`, workspace: h.repo, worker: 'mock', metadata: { mock: { sleep_ms: 30_000 } } });
      await until(() => listEvents(h.engine.db, { taskId: task.id, types: ['worker.started'] }).events.length > 0, 30_000, 'start');
      const t = Date.now();
      await call(h, 'cancel_task', { id: task.id });
      await waitTasks(h.engine, [task.id], 30_000);
      const ended = listEvents(h.engine.db, { taskId: task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'cancelled')!;
      lat.push(ended.ts - t);
    }
    figures['cancel → task cancelled, tree killed (other process) p50, ms'] = pct(lat, 50);
  } finally {
    leader.kill('SIGTERM');
    await exited(leader);
    h.cleanup();
  }
}

/**
 * What creating a file costs in the temp folder right now (the homes live there). A drain creates a few per
 * task (run folder, raw log, the worker's answer file), and some file systems make that slow for a while
 * after many deletions: ext4 without a journal skips inodes freed in the last 60 to 360 s one by one (this
 * machine: ~15 µs quiet, ~400 µs after a test run). Shown so a slow drain can be told from a slow disk.
 */
function fileCreateMicros(): number {
  const t = tempDir('lw-fs-');
  try {
    const start = performance.now();
    for (let i = 0; i < 100; i++) writeFileSync(join(t.dir, `f${i}`), 'x');
    return ((performance.now() - start) / 100) * 1000;
  } finally {
    t.cleanup();
  }
}

export async function run(): Promise<Figures> {
  await ensureBuild();
  const figures: Figures = {};
  figures['file system: creating a file in the temp folder now, µs'] = fileCreateMicros();
  // LIGHTWORKER_BENCH_PARTS=drain (or latency, cancel; comma-separated): only those parts, e.g. a short before/after.
  const parts = new Set((process.env.LIGHTWORKER_BENCH_PARTS ?? 'drain,latency,cancel').split(','));
  if (parts.has('drain')) await drain(figures);
  if (parts.has('latency')) await latency(figures);
  if (parts.has('cancel')) await cancel(figures);
  return figures;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const figures = await run();
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(72)} ${typeof v === 'number' ? Number(v.toFixed(2)) : v}\n`);
  process.exit(0);
}
