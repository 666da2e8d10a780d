// The PostgreSQL fleet under faults: three real `lightworker run` processes (hosts host-a/b/c, each reaching an
// embedded PostgreSQL through its own loopback TCP proxy) run mock-worker tasks that write a side log of when
// each attempt was alive, while one runner at a time is killed with SIGKILL (and started again), frozen with
// SIGSTOP past its lease (then woken), or has its connection cut or black-holed; the full size adds server
// restarts and a full disk (fleet-pg-disk.ts). Orphans of a lost runner resume by themselves (`[scheduler] auto_resume_orphans`). Measured: double
// runs and overlapping attempts (side log), lost and stuck tasks, surviving processes, leaks of the store
// password, and the time from each fault to its orphaned task running again.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { makeFleetHosts, type Beat } from '../helpers/fleet-hosts.js';
import { startTestPostgres, watchExitHooks, type TestPostgres } from '../helpers/postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { tempDir } from '../helpers/env.js';
import { exited } from '../helpers/procs.js';
import { countTaskStrategyMoves } from '../../main/store/task-history.js';
import { AUTO_RESUME_LIMIT } from '../../main/tasks/auto-resume.js';
import { AUTO_RESUME_STRATEGY } from '../../main/tasks/ops.js';
import { HOSTS, countLeaks, liveWorkers, measureBeats, searchWorkerEnvs, type Ctx, type FaultKind, type FleetPgFigures, type Held } from './fleet-pg-measure.js';
import { applyFullDisk, mountPgDisk, newDiskFigures, type PgDisk } from './fleet-pg-disk.js';
import { ACTIVE_STATES, END_STATES, findMarkedProcesses, killPids } from './observe.js';
import { createRng, sleep, type Rng } from './rng.js';

export type { FaultKind, FleetPgFigures } from './fleet-pg-measure.js';

export interface FleetPgOptions {
  kills: number;
  freezes: number;
  /** Connection faults, alternately a cut (connections dropped, new ones refused) and a black hole. */
  cuts: number;
  serverRestarts: number;
  /** Times the server's disk is filled (its data folder on a small tmpfs: root only). */
  fullDisks: number;
  /** Size of that tmpfs, MB. */
  diskMb: number;
  seed: number;
  log: (line: string) => void;
}

const LEASE_MS = 2500;
const TASK_TIMEOUT_S = 60;
const RECOVERY_WAIT_MS = 60_000;
/** Tasks kept queued or active while faults are injected, so every fault meets running work. */
const BACKLOG = 8;

/** Every runner and worker of the fleets running in this process, for a Ctrl-C of the chaos run. */
const LIVE = new Set<Ctx>();

export function killAllFleets(): void {
  for (const c of LIVE) {
    for (const ch of c.children) if (alive(ch)) ch.kill('SIGKILL');
    killPids(liveWorkers(c).map((w) => w.pid));
  }
}

function startRunner(c: Ctx, host: string): void {
  c.children.push(c.fleet.start(host, c.env));
}

const alive = (child: ChildProcess | undefined) => !!child && child.exitCode === null && child.signalCode === null;

async function submit(c: Ctx, n: number): Promise<void> {
  const base = c.ids.length;
  const tasks = Array.from({ length: n }, (_, i) => ({
    objective: `fleet chaos task ${base + i}`,
    workspace: join(c.fleet.dir, 'laptop', 'src', 'api'),
    timeout_s: TASK_TIMEOUT_S,
    // A third answer at length: their completing write needs new pages, which a full server disk refuses.
    metadata: { mock: { beat_log: c.fleet.beatLog, sleep_ms: c.rng.int(2500, 7000), ...(c.rng.int(0, 2) === 0 ? { text: randomBytes(24_000).toString('base64') } : {}) } },
  }));
  const r = (await c.fleet.call('delegate_batch', { tasks })) as { tasks: { id: string }[] };
  c.ids.push(...r.tasks.map((t) => t.id));
}

function rows(c: Ctx): { id: string; status: string; attempt: number; runnerId: string | null; startedAt: number | null; timeoutS: number }[] {
  return c.fleet.laptop.db
    .prepare(`SELECT id, status, attempt, runner_id AS "runnerId", started_at AS "startedAt", timeout_s AS "timeoutS" FROM tasks ORDER BY created_at`)
    .all() as ReturnType<typeof rows>;
}

/** A task's status moves, for the notes: `running@20:41:50.269 orphaned[runner … was lost]@… queued(auto_resume)@…`. */
function history(c: Ctx, id: string): string {
  const moves = c.fleet.laptop.db.prepare(`SELECT type, payload, ts FROM events WHERE task_id = ? AND type IN ('task.status', 'task.auto_resume_skipped') ORDER BY seq`).all(id) as { type: string; payload: string; ts: number }[];
  return moves.map((m) => {
    const p = JSON.parse(m.payload) as { to?: string; strategy?: string; reason?: string };
    const why = p.to === 'orphaned' || m.type !== 'task.status' ? `[${(p.reason ?? '').slice(0, 90)}]` : '';
    return `${m.type === 'task.status' ? p.to : 'auto_resume_skipped'}${p.strategy ? `(${p.strategy})` : ''}${why}@${new Date(m.ts).toISOString().slice(11, 23)}`;
  }).join(' ');
}

/** Tasks running with a live worker (it has beaten) on the host's current runner. */
function heldBy(c: Ctx, host: string): Held[] {
  const runner = c.fleet.runnerOf(host);
  if (!runner || runner.state !== 'active') return [];
  const beating = new Set(c.fleet.beats().map((b) => `${b.task} ${b.attempt}`));
  return rows(c).filter((r) => r.runnerId === runner.id && r.status === 'running' && beating.has(`${r.id} ${r.attempt}`)).map((r) => ({ id: r.id, attempt: r.attempt }));
}

/** Wait until some host's runner holds running work; returns that host (chosen by the seed) and its tasks. */
async function pickVictim(c: Ctx): Promise<{ host: string; held: Held[] } | null> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const active = rows(c).filter((r) => !END_STATES.has(r.status)).length;
    if (active < BACKLOG) await submit(c, BACKLOG - active + 2);
    const busy = HOSTS.filter((h) => alive(c.fleet.runners[h])).map((h) => ({ host: h, held: heldBy(c, h) })).filter((x) => x.held.length > 0);
    if (busy.length) return c.rng.pick(busy);
    await sleep(100);
  }
  return null;
}

/** The first beat of a later attempt of `h`, or 'done' when `h`'s attempt ended without being orphaned. */
function recovered(c: Ctx, h: Held, beats: Beat[]): number | 'done' | null {
  const next = beats.filter((b) => b.task === h.id && b.attempt > h.attempt);
  if (next.length) return Math.min(...next.map((b) => b.at));
  const row = c.fleet.status(h.id);
  return row.attempt === h.attempt && row.status === 'completed' ? 'done' : null;
}

/**
 * Orphaned after its AUTO_RESUME_LIMIT automatic resumes: by design it waits for a person, whom the scenario
 * plays (a resume, which spends the tree's retry budget). Returns true when `id` was such a task.
 */
async function resumeAtLimit(c: Ctx, id: string): Promise<boolean> {
  const row = c.fleet.status(id);
  if (row.status !== 'orphaned') return false;
  if (c.figures.leftAtLimit.includes(`${id} attempt ${row.attempt}`)) return true;
  const resumes = countTaskStrategyMoves(c.fleet.laptop.db, id, [AUTO_RESUME_STRATEGY]);
  if (resumes < AUTO_RESUME_LIMIT) return false;
  c.figures.leftAtLimit.push(`${id} attempt ${row.attempt}`);
  try {
    await c.fleet.call('retry_task', { id, strategy: 'resume' });
  } catch (err) {
    c.figures.notes.push(`${id}: orphaned after ${resumes} automatic resumes; a resume by hand was refused: ${(err as Error).message}`);
  }
  return true;
}

/** Until every held task ran again (or ended on its own attempt); records the recovery times. */
async function awaitRecovery(c: Ctx, kind: FaultKind, t0: number, held: Held[], pending = new Set(held.map((h) => h.id))): Promise<void> {
  const deadline = t0 + RECOVERY_WAIT_MS;
  while (pending.size && Date.now() < deadline) {
    searchWorkerEnvs(c);
    const beats = c.fleet.beats();
    for (const h of held) {
      if (!pending.has(h.id)) continue;
      if (await resumeAtLimit(c, h.id)) {
        pending.delete(h.id);
        continue;
      }
      const r = recovered(c, h, beats);
      if (r === null) continue;
      pending.delete(h.id);
      if (r !== 'done') c.figures.recoveryMs.push(r - t0);
    }
    if (pending.size) await sleep(100);
  }
  for (const id of pending) {
    c.figures.recoveryTimeouts++;
    c.figures.notes.push(`${kind} at ${new Date(t0).toISOString()}: task ${id} did not run again within ${RECOVERY_WAIT_MS / 1000} s (${JSON.stringify(c.fleet.status(id))}): ${history(c, id)}`);
  }
}

/** A frozen or cut-off runner is faulted until the fleet found it lost and its tasks ran again elsewhere. */
async function holdFault(c: Ctx, kind: FaultKind, host: string, held: Held[], undo: () => Promise<void>): Promise<void> {
  const t0 = Date.now();
  try {
    await awaitRecovery(c, kind, t0, held);
  } finally {
    await undo();
  }
  // Cut off, a runner may end itself (exit 1: its store stopped answering); a host's service would start it again.
  await sleep(LEASE_MS);
  if (!alive(c.fleet.runners[host])) {
    c.figures.notes.push(`${kind} of ${host}: its runner exited (code ${c.fleet.runners[host].exitCode}) and was started again`);
    startRunner(c, host);
  }
}

/**
 * The next fault waits until the tasks this one hit have ended: faults are spaced as on a real fleet (rarer
 * than tasks are long), so the figures measure each fault rather than one task hit again and again.
 */
async function awaitSettled(c: Ctx, held: Held[]): Promise<void> {
  const deadline = Date.now() + TASK_TIMEOUT_S * 1000 + LEASE_MS;
  while (Date.now() < deadline) {
    for (const h of held) await resumeAtLimit(c, h.id);
    if (held.every((h) => END_STATES.has(c.fleet.status(h.id).status) && c.fleet.status(h.id).status !== 'orphaned')) return;
    await sleep(200);
  }
}

async function injectFault(c: Ctx, kind: FaultKind, disk: PgDisk | null): Promise<void> {
  if (kind === 'full disk') {
    if (!disk) return;
    // Work running on more than one runner: the full disk meets tasks at every stage across the fleet.
    const until = Date.now() + 30_000;
    while (Date.now() < until && HOSTS.filter((h) => heldBy(c, h).length > 0).length < 2) {
      await pickVictim(c);
      await sleep(100);
    }
    c.figures.faults[kind]++;
    const active = () => rows(c).filter((r) => !END_STATES.has(r.status)).map((r) => ({ id: r.id, attempt: r.attempt }));
    const before = active();
    await applyFullDisk(c, disk, (h) => startRunner(c, h), () => submit(c, BACKLOG));
    await awaitSettled(c, [...before, ...active()]);
    return;
  }
  const victim = await pickVictim(c);
  if (!victim) {
    c.figures.notes.push(`${kind}: no runner held running work within 30 s; fault skipped`);
    return;
  }
  const { host, held } = victim;
  c.log(`fleet: ${kind} ${host} holding ${held.length} tasks`);
  c.figures.faults[kind]++;
  const child = c.fleet.runners[host];
  await applyFault(c, kind, host, held, child);
  await awaitSettled(c, kind === 'server restart' ? rows(c).filter((r) => !END_STATES.has(r.status)).map((r) => ({ id: r.id, attempt: r.attempt })) : held);
}

async function applyFault(c: Ctx, kind: FaultKind, host: string, held: Held[], child: ChildProcess): Promise<void> {
  if (kind === 'kill') {
    const t0 = Date.now();
    child.kill('SIGKILL');
    await exited(child);
    await sleep(c.rng.int(200, 1500));
    startRunner(c, host);
    await awaitRecovery(c, kind, t0, held);
  } else if (kind === 'freeze') {
    child.kill('SIGSTOP');
    await holdFault(c, kind, host, held, async () => void child.kill('SIGCONT'));
  } else if (kind === 'cut') {
    await c.proxies[host].cut();
    await holdFault(c, kind, host, held, () => c.proxies[host].restore());
  } else if (kind === 'blackhole') {
    c.proxies[host].blackhole();
    await holdFault(c, kind, host, held, () => c.proxies[host].restore());
  } else {
    const all = HOSTS.flatMap((h) => heldBy(c, h));
    const t0 = Date.now();
    await c.pg.restart();
    await sleep(LEASE_MS);
    for (const h of HOSTS) if (!alive(c.fleet.runners[h])) {
      c.figures.notes.push(`server restart: ${h}'s runner exited (code ${c.fleet.runners[h].exitCode}) and was started again`);
      startRunner(c, h);
    }
    await awaitRecovery(c, kind, t0, all);
  }
}

async function drain(c: Ctx): Promise<void> {
  const deadline = Date.now() + (TASK_TIMEOUT_S + LEASE_MS / 1000) * 1000 + 30_000;
  for (;;) {
    for (const r of rows(c)) if (r.status === 'orphaned') await resumeAtLimit(c, r.id);
    if (Date.now() > deadline || rows(c).every((r) => END_STATES.has(r.status))) break;
    await sleep(250);
  }
  const now = Date.now();
  for (const r of rows(c)) {
    if (ACTIVE_STATES.has(r.status) && r.startedAt !== null && now - r.startedAt > r.timeoutS * 1000 + LEASE_MS) {
      c.figures.stuckTasks++;
      c.figures.notes.push(`stuck: ${r.id} ${r.status} (attempt ${r.attempt}) for ${Math.round((now - r.startedAt) / 1000)} s`);
    }
    if (r.status !== 'completed' && !(r.status === 'cancelled' && c.cancelled.has(r.id))) {
      c.figures.lostTasks++;
      const why = (c.fleet.laptop.db.prepare('SELECT error_message AS m FROM tasks WHERE id = ?').get(r.id) as { m: string | null } | undefined)?.m;
      c.figures.notes.push(`lost: ${r.id} ended ${r.status} (attempt ${r.attempt}, runner host ${c.fleet.hostOfRunner(r.runnerId)}${why ? `; ${why.slice(0, 200)}` : ''}): ${history(c, r.id)}`);
    }
  }
}

async function stopRunners(c: Ctx): Promise<void> {
  for (const h of HOSTS) if (alive(c.fleet.runners[h])) c.fleet.runners[h].kill('SIGTERM');
  const stopped = await Promise.race([Promise.all(c.children.map((ch) => exited(ch))).then(() => true), sleep(30_000).then(() => false)]);
  if (!stopped) c.figures.notes.push('a runner did not stop within 30 s of SIGTERM');
  await sleep(2000);
  const ids = new Set(c.ids);
  const found = [
    ...findMarkedProcesses({ taskIds: ids }),
    ...Object.values(c.fleet.homes).flatMap((home) => findMarkedProcesses({ home })),
  ];
  const pids = [...new Set([...found.map((p) => p.pid), ...liveWorkers(c).map((w) => w.pid)])];
  c.figures.survivors = pids.length;
  for (const p of found) c.figures.notes.push(`survivor: pid ${p.pid} (${p.why}) ${p.cmd}`);
  killPids(pids);
}

function faultPlan(o: FleetPgOptions, rng: Rng): FaultKind[] {
  const plan: FaultKind[] = [
    ...Array<FaultKind>(o.kills).fill('kill'),
    ...Array<FaultKind>(o.freezes).fill('freeze'),
    ...Array.from({ length: o.cuts }, (_, i): FaultKind => (i % 2 ? 'blackhole' : 'cut')),
    ...Array<FaultKind>(o.serverRestarts).fill('server restart'),
    ...Array<FaultKind>(o.fullDisks).fill('full disk'),
  ];
  for (let i = plan.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [plan[i], plan[j]] = [plan[j], plan[i]];
  }
  return plan;
}

export async function runFleetPg(o: FleetPgOptions): Promise<FleetPgFigures> {
  const figures: FleetPgFigures = {
    faults: { kill: 0, freeze: 0, cut: 0, blackhole: 0, 'server restart': 0, 'full disk': 0 },
    tasks: 0, attempts: 0, doubleRuns: 0, overlaps: [], lostTasks: 0, stuckTasks: 0, survivors: 0, leaks: 0, workerEnvsSearched: 0, recoveryMs: [], recoveryTimeouts: 0, leftAtLimit: [], disk: newDiskFigures(o.diskMb), notes: [],
  };
  const t = tempDir('lw-chaos-fleet-');
  const disk = o.fullDisks > 0 ? mountDisk(o.diskMb, figures) : null;
  let pg: TestPostgres;
  const dropExitHooks = watchExitHooks();
  try {
    // A small data folder fills fast: the WAL kept to a few segments (the tmpfs holds the whole run's data).
    pg = await startTestPostgres(disk ? { parent: disk.dir, settings: ['max_wal_size=64MB', 'min_wal_size=32MB'] } : {});
  } catch (err) {
    disk?.unmount();
    t.cleanup();
    throw err;
  } finally {
    dropExitHooks();
  }
  const proxies: Record<string, TcpProxy> = {};
  let c: Ctx | null = null;
  try {
    for (const h of HOSTS) proxies[h] = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(pg.url).port) });
    const fleet = makeFleetHosts(t.dir, pg.url, { hosts: HOSTS, portOf: (h) => proxies[h]?.port, leaseOf: () => LEASE_MS, autoResume: true });
    const secret = `pgchaos-${randomBytes(12).toString('hex')}`;
    c = { fleet, pg, proxies, env: { PGPASSWORD: secret }, children: [], ids: [], rng: createRng(o.seed), figures, log: o.log, seenWorkers: new Set(), secret, cancelled: new Set() };
    LIVE.add(c);
    for (const h of HOSTS) startRunner(c, h);
    const plan = faultPlan(o, c.rng);
    o.log(`fleet: ${plan.length} faults on ${HOSTS.length} runners (PostgreSQL ${pg.url})`);
    for (const kind of plan) await injectFault(c, kind, disk);
    await drain(c);
    figures.tasks = c.ids.length;
    await stopRunners(c);
    measureBeats(c);
    countLeaks(c);
  } finally {
    killAllFleets();
    if (c) LIVE.delete(c);
    c?.fleet.laptop.close();
    for (const p of Object.values(proxies)) await p.close();
    await pg.stop();
    disk?.unmount();
    t.cleanup();
  }
  return figures;
}

/** The server's data folder on a small tmpfs, or null with the reason recorded (not run; a failure under CI only with the prerequisite present). */
function mountDisk(sizeMb: number, figures: FleetPgFigures): PgDisk | null {
  const m = mountPgDisk(sizeMb);
  if (!('reason' in m)) {
    figures.disk.run = true;
    return m;
  }
  figures.disk.skipped = m.reason;
  figures.notes.push(`full disk not run: ${m.reason}`);
  return null;
}
