// Scenario 1: kill -9 of the leader, N times, while two or more `lightworker run` processes compete and a
// DAG of chaos-agent tasks runs (SIGTERM-ignoring grandchildren, background children holding stdout,
// setsid-escaped descendants, verify commands that take a while). Then: retry the orphans, let
// everything end, stop the leaders and measure double runs, lost and stuck tasks, survivors, takeover
// latency and the audit chain.
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chaosObjective, withLab, type Lab } from './lab.js';
import { ACTIVE_STATES, END_STATES, countDoubleRuns, findMarkedProcesses, openDbReadOnly, percentile, readLease, readTasks, type TaskRow } from './observe.js';
import { createRng, sleep, type Rng } from './rng.js';

export interface KillOptions {
  kills: number;
  /** `run` processes kept alive at once (≥ 2: they compete for the lease). */
  leaders: number;
  /** Hard timeout of every task, seconds. */
  taskTimeoutS: number;
  seed: number;
  log: (line: string) => void;
}

export interface KillFigures {
  kills: number;
  takeoverMs: number[];
  takeoverTimeouts: number;
  tasks: number;
  workerStarts: number;
  doubleRuns: number;
  lostTasks: number;
  stuckTasks: number;
  survivors: number;
  auditOk: boolean;
  notes: string[];
}

const GRACE_MS = 1000; // kill_grace_ms of the lab's config
const LINGER_S = 3600; // leftovers of the agent end by themselves after this (cleanup kills them sooner)

/** A batch of six tasks: a diamond a → (b, c) → d, and a chain e → f, with random misbehaviour. */
function writeBatch(lab: Lab, rng: Rng, n: number, timeoutS: number): string {
  const task = (ref: string, depends: string[]) => {
    const execute = rng.chance(0.2);
    const spec = {
      sleep_ms: rng.int(300, 2500),
      grandchild: rng.chance(0.5),
      bg_stdout: rng.chance(0.15),
      escaped: rng.chance(0.2),
      linger_s: LINGER_S,
      ...(execute ? { write_file: `chaos-${n}-${ref}.txt` } : {}),
    };
    return {
      ref,
      name: `chaos ${n} ${ref}`,
      objective: chaosObjective(`chaos batch ${n} task ${ref}`, spec),
      kind: execute ? 'execute' : 'explore',
      mode: 'auto_execute',
      workspace: lab.repo,
      worker: 'chaos-agent',
      timeout_s: timeoutS,
      ...(rng.chance(0.3) ? { verify: [['sleep', String(rng.int(1, 2))]] } : {}),
      depends_on: depends,
    };
  };
  const file = join(lab.root, `batch-${n}.json`);
  const tasks = [task('a', []), task('b', ['a']), task('c', ['a']), task('d', ['b', 'c']), task('e', []), task('f', ['e'])];
  writeFileSync(file, JSON.stringify({ tasks }));
  return file;
}

async function until(cond: () => boolean, timeoutMs: number, everyMs = 50): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(everyMs);
  }
  return cond();
}

/** Run the kill scenario in its own lab. */
export async function runKills(o: KillOptions): Promise<KillFigures> {
  return withLab('kills', { agentConcurrency: 6 }, async (lab) => {
    const rng = createRng(o.seed);
    const db = openDbReadOnly(lab.home);
    const notes: string[] = [];
    const leaders = new Set<ChildProcess>();
    const submitted = new Set<string>();
    const takeoverMs: number[] = [];
    let takeoverTimeouts = 0;
    let batches = 0;
    const ensureLeaders = () => {
      while (leaders.size < Math.max(2, o.leaders)) {
        const c = lab.start(['run']);
        leaders.add(c);
        c.once('exit', () => leaders.delete(c));
      }
    };
    const submitBatch = async () => {
      const r = await lab.cli(['submit', '--batch', writeBatch(lab, rng, ++batches, o.taskTimeoutS), '--json']);
      if (r.code !== 0) throw new Error(`submit --batch failed: ${r.stderr}`);
      for (const m of r.stdout.matchAll(/"id":\s*"([0-9A-Z]{26})"/g)) submitted.add(m[1]);
    };
    const retryOrphans = async (max: number) => {
      const orphans = readTasks(db).filter((t) => t.status === 'orphaned').slice(0, max);
      for (let i = 0; i < orphans.length; i += 3) {
        await Promise.all(orphans.slice(i, i + 3).map((t) => lab.cli(['retry', t.id])));
      }
      return orphans.length;
    };
    try {
      ensureLeaders();
      let done = 0;
      for (let cycle = 0; done < o.kills && cycle < o.kills * 3; cycle++) {
        ensureLeaders();
        const tasks = readTasks(db);
        if (tasks.filter((t) => t.status === 'queued' || ACTIVE_STATES.has(t.status)).length < 4) await submitBatch();
        if (cycle % 5 === 4) await retryOrphans(2);
        // Kill while the leader runs something: that is when a takeover has work to recover.
        const busy = await until(() => {
          const lease = readLease(db);
          return Boolean(lease && readTasks(db).some((t) => t.status === 'running' && t.runner_id === lease.holder));
        }, 20_000);
        if (!busy) notes.push(`cycle ${cycle}: no running task under the leader within 20 s`);
        await sleep(rng.int(0, 1000));
        const lease = readLease(db);
        const victim = [...leaders].find((c) => c.pid === lease?.pid);
        if (!lease || !victim) {
          await sleep(500);
          continue;
        }
        const owned = readTasks(db).filter((t) => ACTIVE_STATES.has(t.status) && t.runner_id === lease.holder);
        const seqBefore = (db.prepare('SELECT MAX(seq) AS s FROM events').get() as { s: number }).s;
        const killedAt = Date.now();
        victim.kill('SIGKILL');
        done++;
        await until(() => victim.exitCode !== null || victim.signalCode !== null, 2000);
        ensureLeaders();
        if (!owned.length) continue;
        const ids = owned.map((t) => t.id);
        const ended = new Map<string, number>();
        const recovered = await until(() => {
          const rows = db
            .prepare(`SELECT task_id, ts, payload FROM events WHERE seq > ? AND type = 'task.status' AND task_id IN (${ids.map(() => '?').join(',')})`)
            .all(seqBefore, ...ids) as { task_id: string; ts: number; payload: string }[];
          for (const r of rows) if (END_STATES.has(JSON.parse(r.payload).to as string) && !ended.has(r.task_id)) ended.set(r.task_id, r.ts);
          return ended.size === ids.length;
        }, 30_000, 25);
        if (recovered) takeoverMs.push(Math.max(...ended.values()) - killedAt);
        else {
          takeoverTimeouts++;
          notes.push(`kill ${done}: ${ids.length - ended.size} of the dead leader's ${ids.length} tasks not orphaned within 30 s`);
        }
        if (done % 10 === 0) o.log(`  kills: ${done}/${o.kills}, takeover p50 ${percentile(takeoverMs, 50)} ms`);
      }
      ensureLeaders();
      const retried = await retryOrphans(10_000);
      o.log(`  kills done; retried ${retried} orphaned tasks; waiting for every task to end`);
      await settle(db, o.taskTimeoutS * 1000 + GRACE_MS + 15_000, 30 * 60_000);
      const final = readTasks(db);
      const now = Date.now();
      const stuck = final.filter((t) => ACTIVE_STATES.has(t.status) && now - (t.started_at ?? t.updated_at) > t.timeout_s * 1000 + GRACE_MS + 5000);
      const lost = final.filter((t) => !END_STATES.has(t.status));
      const vanished = [...submitted].filter((id) => !final.some((t) => t.id === id));
      if (stuck.length) notes.push(`stuck: ${describe(stuck)}`);
      if (lost.length) notes.push(`not ended: ${describe(lost)}`);
      if (vanished.length) notes.push(`vanished: ${vanished.length} submitted tasks are not in the database`);
      notes.push(...(await stopLeaders(leaders)));
      await sleep(2000);
      const survivors = findMarkedProcesses({ runId: lab.runId, taskIds: new Set(final.map((t) => t.id)) });
      if (survivors.length) notes.push(`survivors: ${survivors.length}, e.g. ${survivors.slice(0, 3).map((p) => `${p.pid} ${p.cmd.slice(0, 60)}`).join('; ')}`);
      const runs = countDoubleRuns(readFileSync(lab.runLog, 'utf8'));
      if (runs.doubleRuns) notes.push(`double runs: ${runs.pairs.slice(0, 5).join(', ')}`);
      const audit = await lab.cli(['audit', 'verify']);
      if (audit.code !== 0) notes.push(`audit verify failed: ${audit.stderr.trim().slice(0, 200)}`);
      return {
        kills: done,
        takeoverMs,
        takeoverTimeouts,
        tasks: final.length,
        workerStarts: runs.starts,
        doubleRuns: runs.doubleRuns,
        lostTasks: lost.length + vanished.length,
        stuckTasks: stuck.length,
        survivors: survivors.length,
        auditOk: audit.code === 0,
        notes,
      };
    } finally {
      db.close();
    }
  });
}

/**
 * Wait until every task ended, as long as the queue makes progress: the wait ends early when nothing
 * changed status for `quietMs` (longer than any task may run, so only stuck work stops it), and at `capMs`.
 */
async function settle(db: ReturnType<typeof openDbReadOnly>, quietMs: number, capMs: number): Promise<void> {
  const end = Date.now() + capMs;
  let lastSeq = -1;
  let lastChange = Date.now();
  while (Date.now() < end && Date.now() - lastChange < quietMs) {
    if (readTasks(db).every((t) => END_STATES.has(t.status))) return;
    const seq = (db.prepare(`SELECT MAX(seq) AS s FROM events WHERE type = 'task.status'`).get() as { s: number | null }).s ?? 0;
    if (seq !== lastSeq) [lastSeq, lastChange] = [seq, Date.now()];
    await sleep(250);
  }
}

function describe(tasks: TaskRow[]): string {
  const by = new Map<string, number>();
  for (const t of tasks) by.set(t.status, (by.get(t.status) ?? 0) + 1);
  return [...by].map(([s, n]) => `${n} ${s}`).join(', ');
}

/** SIGTERM every leader; one that has not exited after 10 s is SIGKILLed and named in a note. */
export async function stopLeaders(leaders: Set<ChildProcess>): Promise<string[]> {
  const notes: string[] = [];
  const all = [...leaders];
  for (const c of all) c.kill('SIGTERM');
  await until(() => all.every((c) => c.exitCode !== null || c.signalCode !== null), 10_000);
  const hung = all.filter((c) => c.exitCode === null && c.signalCode === null);
  if (hung.length) notes.push(`${hung.length} of ${all.length} leaders did not exit within 10 s of SIGTERM (killed)`);
  for (const c of hung) c.kill('SIGKILL');
  return notes;
}
