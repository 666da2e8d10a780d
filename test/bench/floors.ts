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

/** p50 of `k` calls of `fn`, ms. */
async function timed(k: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < k; i++) {
    const t = performance.now();
    await fn(i);
    xs.push(performance.now() - t);
  }
  return p50(xs);
}

/** Grow `h`'s store to `total` tasks: explore tasks held behind one execute task that awaits approval (never dispatched). */
async function growTo(h: TestHome, gate: string, have: number, total: number): Promise<void> {
  for (let done = have; done < total; done += 100) {
    const tasks = Array.from({ length: Math.min(100, total - done) }, (_, i) => ({ objective: `stored ${done + i}`, workspace: h.repo, kind: 'explore', depends_on: [gate] }));
    await call(h, 'delegate_batch', { tasks });
  }
}

/**
 * At each stored size: per-operation p50 (create, dispatch = created → running on a running leader,
 * wait on an ended task, show, events, list_tasks first page) in-process, the leader's peak RSS, and the
 * MCP per-call costs over stdio; each op's curve is judged against its value at the smallest size.
 */
async function storeCurves(figures: Figures): Promise<void> {
  const h = benchHome(null);
  const curves = new Map<string, number[]>();
  const put = (k: string, v: number) => curves.set(k, [...(curves.get(k) ?? []), v]);
  try {
    const gate = (await call(h, 'delegate_task', { objective: 'gate', workspace: h.repo, kind: 'execute' })).task.id as string;
    let have = 1;
    for (const size of STORED) {
      await growTo(h, gate, have, Math.max(size, 1));
      have = Math.max(have, size);
      const leader = startLeader(['run'], h);
      const w = watchProcess(leader.pid!);
      let ended = '';
      try {
        await until(() => Boolean(h.engine.db.prepare('SELECT 1 FROM leases WHERE expires_at > ?').get(Date.now())), 30_000, 'leader lease');
        const running: number[] = [];
        for (let i = 0; i < 12; i++) {
          const { task } = await call(h, 'delegate_task', { objective: `lone ${size}.${i}`, workspace: h.repo, kind: 'explore' });
          await waitTasks(h.engine, [task.id], 30_000);
          const ev = listEvents(h.engine.db, { taskId: task.id, types: ['task.status'] }).events.find((e) => e.payload.to === 'running');
          if (i >= 2 && ev) running.push(ev.ts - task.createdAt); // the first two warm the leader up
          ended = task.id;
        }
        put('dispatch (created → running, leader running)', p50(running));
        put('leader peak RSS', w.now().hwmKiB / 1024);
      } finally {
        w.stop();
        leader.kill('SIGTERM');
        await exited(leader);
      }
      // Creates land behind the gate (no leader runs now), so the store's size stays what is measured.
      put('create (delegate_task)', await timed(30, (i) => call(h, 'delegate_task', { objective: `probe ${size}.${i}`, workspace: h.repo, kind: 'explore', depends_on: [gate] })));
      have += 30;
      put('wait_tasks on an ended task', await timed(30, () => call(h, 'wait_tasks', { ids: [ended], timeout_s: 1 })));
      put('show (get_task)', await timed(30, () => call(h, 'get_task', { id: ended })));
      put('events of a task (get_events)', await timed(30, () => call(h, 'get_events', { task_id: ended })));
      put('list_tasks first page', await timed(30, () => call(h, 'list_tasks', {})));
      const mcp = await mcpFigures(h, ended);
      for (const [k, v] of Object.entries(mcp.perCall)) put(k, v);
      figures[`MCP tools/list bytes (budget 7,000), ${size} stored`] = mcp.toolsListBytes;
      figures[`MCP list_tasks page bytes (budget 30,720), ${size} stored`] = mcp.pageBytes;
      if (size === STORED[0]) addRow('MCP spawn → initialize → tools/list', 'node -e 0', mcp.zeroWall, mcp.spawnToList, 'ms', 'Python 212 ms');
      process.stderr.write(`  stored ${size}: measured\n`);
    }
  } finally {
    h.cleanup();
  }
  for (const [k, vs] of curves) {
    const unit = k.includes('RSS') ? 'MiB' : 'ms';
    // The curve's floor is its value at the smallest size: the ratio is how much the store's size adds.
    addRow(`${k} at ${STORED.join(' / ')} stored`, `at ${STORED[0]} stored`, [vs[0]], vs, unit, k.includes('RSS') ? 'flat' : '≤ 1.2×', true);
  }
}

/** Over a real stdio `lightworker mcp` child on `h`: per-call p50 (ping, get_task, list_tasks), answer sizes, spawn → tools/list. */
async function mcpFigures(h: TestHome, id: string) {
  const zeroWall: number[] = [];
  const spawnToList: number[] = [];
  let toolsListBytes = 0;
  for (let r = 0; r < ROUNDS; r++) {
    zeroWall.push((await runNode(['-e', '0'])).wallMs);
    const t = performance.now();
    const c = new StdioChild(h.home, { LIGHTWORKER_NO_BUILD_CHECK: '1' });
    try {
      await c.initialize();
      const list = await c.request('tools/list');
      spawnToList.push(performance.now() - t);
      toolsListBytes = Buffer.byteLength(JSON.stringify(list.result));
    } finally {
      await c.stop();
    }
  }
  const c = new StdioChild(h.home, { LIGHTWORKER_NO_BUILD_CHECK: '1' });
  try {
    await c.initialize();
    const page = await c.callTool('list_tasks', {});
    const pageBytes = Buffer.byteLength(JSON.stringify(page));
    for (let i = 0; i < 20; i++) await c.request('ping');
    const perCall = {
      'MCP ping per call': await timed(100, () => c.request('ping')),
      'MCP get_task per call': await timed(100, () => c.callTool('get_task', { id })),
      'MCP list_tasks per call': await timed(50, () => c.callTool('list_tasks', {})),
    };
    return { zeroWall, spawnToList, toolsListBytes, pageBytes, perCall };
  } finally {
    await c.stop();
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
  await run();
  process.exit(0);
}
