// Figures as ratios to floors measured in the same run, so that they mean the same on a busy machine and a
// quiet one. Each round runs a floor and then LightWorker's figure right after it (interleaved: machine
// noise hits both), ROUNDS rounds; every row gives min / median / max of the absolute figure and of the
// per-round ratio. Floors: a plain Node spawn loop over the same fake worker (_spawn-loop.mjs), `node -e 0`,
// an empty SQLite UPDATE loop (better-sqlite3, LightWorker's pragmas). Sizes (environment):
//   LIGHTWORKER_BENCH_ROUNDS (3), LIGHTWORKER_BENCH_DRAIN (200), LIGHTWORKER_BENCH_BIG=1 adds the 2,000-task
//   drain and the 100k-stored point (each several minutes on 2 busy cores), LIGHTWORKER_BENCH_STORED
//   (comma-separated stored-task counts, default 0,10000; with BIG 0,10000,100000), LIGHTWORKER_BENCH_FLOOR_PARTS
//   (drain,store). `node bin/run-ts.js test/bench/floors.ts` runs it alone.
// No Python LightWorker column: its seed is not on this machine.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { ensureBuild } from '../../scripts/build-state.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { listEvents } from '../../main/store/events.js';
import { tempDir, type TestHome } from '../helpers/env.js';
import { exited, until } from '../helpers/procs.js';
import { StdioChild } from '../integration/mcp.helpers.js';
import { benchHome, call, drainOnce, FAKE, leadUntilIdle, startLeader, watchProcess } from './scheduler.js';

type Figures = Record<string, number | string>;
const ROUNDS = Number(process.env.LIGHTWORKER_BENCH_ROUNDS ?? 3);
const DRAIN = Number(process.env.LIGHTWORKER_BENCH_DRAIN ?? 200);
const BIG = process.env.LIGHTWORKER_BENCH_BIG === '1';
const STORED = (process.env.LIGHTWORKER_BENCH_STORED ?? (BIG ? '0,10000,100000' : '0,10000')).split(',').map(Number);
const here = fileURLToPath(new URL('.', import.meta.url));
const SPAWN_LOOP = join(here, '_spawn-loop.mjs');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p50 = median;
// (The ours ÷ floor column of a drain row is per round: each round's figure over its own floor.)

interface Row {
  figure: string;
  floorName: string;
  floor: number[];
  ours: number[];
  unit: string;
  target?: string;
  /** A store-size curve: values in size order (not sorted), each divided by the first. */
  curve?: boolean;
}
const rows: Row[] = [];

function addRow(figure: string, floorName: string, floor: number[], ours: number[], unit: string, target?: string, curve = false): void {
  rows.push({ figure, floorName, floor, ours, unit, target, curve });
}

/** A child process to its exit, with the JSON line it printed. */
async function runNode(args: string[]): Promise<{ wallMs: number; out: any }> {
  const t = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await exited(child);
  const wallMs = performance.now() - t;
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited ${code}`);
  return { wallMs, out: out.trim() ? JSON.parse(out.trim().split('\n').pop()!) : null };
}

const NODE_ZERO = ['-e', 'const u=process.cpuUsage();process.stdout.write(JSON.stringify({cpuMs:(u.user+u.system)/1000,maxRssKiB:process.resourceUsage().maxRSS}))'];

/** The spawn-loop floor for `n` tasks: wall, CPU per task (its own start taken out, as the idle leader's is), peak RSS. */
async function spawnLoop(n: number): Promise<{ wallMs: number; cpuPerTaskMs: number; rssMiB: number }> {
  const scratch = tempDir('lw-floor-');
  try {
    const zero = await runNode(NODE_ZERO);
    const r = await runNode([SPAWN_LOOP, FAKE, String(n), '4', scratch.dir]);
    return { wallMs: r.wallMs, cpuPerTaskMs: (r.out.cpuMs - zero.out.cpuMs) / n, rssMiB: r.out.maxRssKiB / 1024 };
  } finally {
    scratch.cleanup();
  }
}

/** µs per UPDATE, each its own transaction, on a WAL database with LightWorker's pragmas. */
function sqliteUpdateLoop(n = 2000): number {
  const scratch = tempDir('lw-floor-db-');
  try {
    const db = new Database(join(scratch.dir, 'floor.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, status TEXT, updated_at INTEGER)');
    const ins = db.prepare('INSERT INTO t (id, status, updated_at) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 200; i++) ins.run(i, 'queued', 0);
    })();
    const up = db.prepare('UPDATE t SET status = ?, updated_at = ? WHERE id = ?');
    const t = performance.now();
    for (let i = 0; i < n; i++) up.run(i % 2 ? 'running' : 'queued', i, i % 200);
    const us = ((performance.now() - t) / n) * 1000;
    db.close();
    return us;
  } finally {
    scratch.cleanup();
  }
}

/** Drain rounds of `n` tasks, each right after its spawn-loop floor. */
async function drains(n: number, rounds: number): Promise<void> {
  const homes: TestHome[] = [];
  const f = { wall: [] as number[], cpu: [] as number[], rss: [] as number[] };
  const o = { wall: [] as number[], cpu: [] as number[], rss: [] as number[] };
  try {
    for (let r = 0; r < rounds; r++) {
      const floor = await spawnLoop(n);
      const idle = benchHome(null);
      homes.push(idle);
      const base = await leadUntilIdle(idle);
      const h = benchHome(null);
      homes.push(h);
      const d = await drainOnce(h, n);
      f.wall.push(floor.wallMs / 1000);
      f.cpu.push(floor.cpuPerTaskMs);
      f.rss.push(floor.rssMiB);
      o.wall.push(d.run.wallMs / 1000);
      o.cpu.push((d.run.cpuMs - base.cpuMs) / n);
      o.rss.push(d.run.hwmKiB / 1024);
      process.stderr.write(`  drain ${n} round ${r + 1}: floor ${(floor.wallMs / 1000).toFixed(2)} s, ours ${(d.run.wallMs / 1000).toFixed(2)} s\n`);
    }
  } finally {
    for (const h of homes) h.cleanup();
  }
  addRow(`drain ${n} @4, wall`, 'Node spawn loop', f.wall, o.wall, 's', '≤ 2×');
  addRow(`leader CPU per task (helper incl., idle subtracted), drain ${n}`, 'Node spawn loop', f.cpu, o.cpu, 'ms', '≤ 1.5×');
  addRow(`leader peak RSS after ${n} drained`, 'Node spawn loop', f.rss, o.rss, 'MiB', '≤ 1.1×');
}

/** Grow `h`'s store to `total` tasks: explore tasks held behind one execute task that awaits approval (never dispatched). */
async function growTo(h: TestHome, gate: string, have: number, total: number): Promise<void> {
  for (let done = have; done < total; done += 100) {
    const tasks = Array.from({ length: Math.min(100, total - done) }, (_, i) => ({ objective: `stored ${done + i}`, workspace: h.repo, kind: 'explore', depends_on: [gate] }));
    await call(h, 'delegate_batch', { tasks });
  }
}

/** One home per stored size, each with its gate and an ended task (shown, waited on, its events read). */
interface SizedHome {
  size: number;
  h: TestHome;
  gate: string;
  ended: string;
}

/** Lone tasks on a running leader of `s.h`: created → running of each after the first two; the leader's peak RSS. */
async function dispatchRound(s: SizedHome, n: number): Promise<{ running: number[]; rssMiB: number }> {
  const leader = startLeader(['run'], s.h);
  const w = watchProcess(leader.pid!);
  try {
    await until(() => Boolean(s.h.engine.db.prepare('SELECT 1 FROM leases WHERE expires_at > ?').get(Date.now())), 30_000, 'leader lease');
    const running: number[] = [];
    for (let i = 0; i < n + 2; i++) {
      const { task } = await call(s.h, 'delegate_task', { objective: `lone ${i}`, workspace: s.h.repo, kind: 'explore' });
      await waitTasks(s.h.engine, [task.id], 30_000);
      const ev = listEvents(s.h.engine.db, { taskId: task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'running');
      if (i >= 2 && ev) running.push(ev.ts - task.createdAt); // the first two warm the leader up
      s.ended = task.id;
    }
    return { running, rssMiB: w.now().hwmKiB / 1024 };
  } finally {
    w.stop();
    leader.kill('SIGTERM');
    await exited(leader);
  }
}

/**
 * Store-size curves: one home per size (each holds at least a full first page, 101 tasks, so list_tasks
 * shows as many rows everywhere), measured interleaved — each call goes to every home in turn, each
 * dispatch round to every home's leader in turn — so machine noise falls on every size alike. Per size:
 * p50 of create, dispatch (created → running on a running leader), wait on an ended task, show, events,
 * the first list_tasks page (in-process, as the CLI calls them), the leader's peak RSS, and MCP per-call
 * costs over stdio. A curve's ratio is each size's value over the smallest size's.
 */
async function storeCurves(figures: Figures): Promise<void> {
  const homes: SizedHome[] = [];
  const curves = new Map<string, number[][]>();
  const put = (k: string, i: number, v: number) => {
    const c = curves.get(k) ?? STORED.map(() => []);
    c[i].push(v);
    curves.set(k, c);
  };
  try {
    for (const size of STORED) {
      const h = benchHome(null);
      const gate = (await call(h, 'delegate_task', { objective: 'gate', workspace: h.repo, kind: 'execute' })).task.id as string;
      await growTo(h, gate, 1, Math.max(size, 101));
      homes.push({ size, h, gate, ended: '' });
      process.stderr.write(`  home with ${size} stored: made\n`);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, s] of homes.entries()) {
        const d = await dispatchRound(s, 4);
        for (const v of d.running) put('dispatch (created → running, leader running)', i, v);
        put('leader peak RSS', i, d.rssMiB);
      }
    }
    // Creates land behind the gate (no leader runs now), so each store keeps its size.
    const each = async (k: string, n: number, fn: (s: SizedHome, j: number) => Promise<unknown>) => {
      for (let j = 0; j < n; j++) {
        for (const [i, s] of homes.entries()) {
          const t = performance.now();
          await fn(s, j);
          put(k, i, performance.now() - t);
        }
      }
    };
    await each('create (delegate_task)', 30, (s, j) => call(s.h, 'delegate_task', { objective: `probe ${j}`, workspace: s.h.repo, kind: 'explore', depends_on: [s.gate] }));
    await each('wait_tasks on an ended task', 30, (s) => call(s.h, 'wait_tasks', { ids: [s.ended], timeout_s: 1 }));
    await each('show (get_task)', 30, (s) => call(s.h, 'get_task', { id: s.ended }));
    await each('events of a task (get_events)', 30, (s) => call(s.h, 'get_events', { task_id: s.ended }));
    await each('list_tasks first page', 60, (s) => call(s.h, 'list_tasks', {}));
    await mcpCurves(homes, put, figures);
  } finally {
    for (const s of homes) s.h.cleanup();
  }
  for (const [k, byHome] of curves) {
    const vs = byHome.map((xs) => (k.includes('RSS') ? Math.max(...xs) : p50(xs)));
    const unit = k.includes('RSS') ? 'MiB' : 'ms';
    addRow(`${k} at ${STORED.join(' / ')} stored`, `at ${STORED[0]} stored`, [vs[0]], vs, unit, k.includes('RSS') ? 'flat' : '≤ 1.2×', true);
  }
}

/** Over real stdio `lightworker mcp` children: spawn → tools/list beside `node -e 0`, answer sizes, per-call p50 (ping, get_task, list_tasks) at each size. */
async function mcpCurves(homes: SizedHome[], put: (k: string, i: number, v: number) => void, figures: Figures): Promise<void> {
  const zeroWall: number[] = [];
  const spawnToList: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    zeroWall.push((await runNode(['-e', '0'])).wallMs);
    const t = performance.now();
    const c = new StdioChild(homes[0].h.home, { LIGHTWORKER_NO_BUILD_CHECK: '1' });
    try {
      await c.initialize();
      const list = await c.request('tools/list');
      spawnToList.push(performance.now() - t);
      figures['MCP tools/list bytes (budget 7,000)'] = Buffer.byteLength(JSON.stringify(list.result));
    } finally {
      await c.stop();
    }
  }
  addRow('MCP spawn → initialize → tools/list', 'node -e 0', zeroWall, spawnToList, 'ms', 'Python 212 ms');
  const children = homes.map((s) => new StdioChild(s.h.home, { LIGHTWORKER_NO_BUILD_CHECK: '1' }));
  try {
    for (const [i, c] of children.entries()) {
      await c.initialize();
      const page = await c.callTool('list_tasks', {});
      figures[`MCP list_tasks page bytes (budget 30,720), ${homes[i].size} stored`] = Buffer.byteLength(JSON.stringify(page));
      for (let j = 0; j < 20; j++) await c.request('ping');
    }
    const each = async (k: string, n: number, fn: (c: StdioChild, s: SizedHome) => Promise<unknown>) => {
      for (let j = 0; j < n; j++) {
        for (const [i, c] of children.entries()) {
          const t = performance.now();
          await fn(c, homes[i]);
          put(k, i, performance.now() - t);
        }
      }
    };
    await each('MCP ping per call', 100, (c) => c.request('ping'));
    await each('MCP get_task per call', 100, (c, s) => c.callTool('get_task', { id: s.ended }));
    await each('MCP list_tasks per call', 50, (c) => c.callTool('list_tasks', {}));
  } finally {
    for (const c of children) await c.stop();
  }
}

const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const triple = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 1 ? fmt(s[0]) : `${fmt(s[0])} / ${fmt(median(s))} / ${fmt(s[s.length - 1])}`;
};

/** The table: figure | floor (min/med/max) | ours (min/med/max) | ratio per round (min/med/max) | target. */
const ordered = (xs: number[]) => xs.map(fmt).join(' / ');
const show = (r: Row, xs: number[]) => (r.curve ? ordered(xs) : triple(xs));
const ratios = (r: Row) => r.ours.map((v, i) => v / r.floor[Math.min(i, r.floor.length - 1)]);

function render(): string {
  const head = ['figure', 'floor', 'floor (min / med / max)', 'ours (min / med / max)', 'ratio ours ÷ floor', 'target'];
  const body = rows.map((r) => [
    r.figure,
    r.floorName,
    `${triple(r.floor)} ${r.unit}`,
    `${show(r, r.ours)} ${r.unit}`,
    show(r, ratios(r)),
    r.target ?? '',
  ]);
  return ['| ' + head.join(' | ') + ' |', '|' + head.map(() => '---').join('|') + '|', ...body.map((b) => '| ' + b.join(' | ') + ' |')].join('\n');
}

export async function run(): Promise<Figures> {
  await ensureBuild();
  rows.length = 0;
  const figures: Figures = {};
  const sqlite: number[] = [];
  for (let r = 0; r < ROUNDS; r++) sqlite.push(sqliteUpdateLoop());
  figures['floor: SQLite UPDATE (own transaction, WAL, synchronous=NORMAL), µs, min/med/max'] = triple(sqlite);
  const parts = new Set((process.env.LIGHTWORKER_BENCH_FLOOR_PARTS ?? 'drain,store').split(','));
  if (parts.has('drain')) await drains(DRAIN, ROUNDS);
  if (parts.has('drain') && BIG) await drains(2000, 1);
  if (parts.has('store')) await storeCurves(figures);
  for (const r of rows) {
    figures[`${r.figure}, ${r.unit}${r.curve ? '' : ' (min/med/max)'}`] = show(r, r.ours);
    figures[`${r.figure}: ratio to ${r.floorName}${r.curve ? '' : ' (min/med/max)'}`] = show(r, ratios(r));
  }
  process.stdout.write(`\n${render()}\n\n`);
  return figures;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const figures = await run();
  for (const [k, v] of Object.entries(figures)) if (!k.includes('(min/med/max)') && !k.includes('ratio to')) process.stdout.write(`${k}  ${v}\n`);
  process.exit(0);
}
