// Development aid (not a bench module: run.ts skips `_` files): drain N trivial explore tasks @4 with the
// shipped leader under `node --cpu-prof`, print the leader's CPU, peak RSS and private memory, and the
// profile's self time by function and by file. `node bin/run-ts.js test/bench/_profile-drain.ts [N] [outDir]`
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { loadConfig } from '../../main/core/config.js';
import { leaderEnv, leaderExecArgv } from '../../main/scheduler/background.js';
import { BIN } from '../helpers/cli.js';
import { makeHome } from '../helpers/env.js';
import { exited } from '../helpers/procs.js';

const N = Number(process.argv[2] ?? 200);
const out = process.argv[3] ?? '/tmp/lw-prof';
const FAKE = fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));
mkdirSync(out, { recursive: true });
const h = makeHome();
writeFileSync(h.engine.home.config, `[scheduler]\nmax_concurrency = 4\nper_repository = 4\nper_root = 4\ndefault_worker = "codex"\n[workers.codex]\ncommand = ${JSON.stringify([FAKE])}\nauth = "none"\n`);
h.engine.config = loadConfig(h.engine.home.config);
for (let b = 0; b < N / 4; b++) {
  const tasks = Array.from({ length: 4 }, (_, i) => ({ objective: `t${b}.${i}`, workspace: h.repo, kind: 'explore' }));
  await runCommand(COMMANDS, { engine: h.engine, face: 'cli', depth: 0 }, 'delegate_batch', { tasks });
}
const prof = process.env.NO_PROF ? [] : ['--cpu-prof', `--cpu-prof-dir=${out}`, '--cpu-prof-interval=200'];
const t = performance.now();
const t0Wall = Date.now();
const wrap = process.env.LW_WRAP?.split(' ').filter(Boolean) ?? [];
const leader = spawn(wrap[0] ?? process.execPath, [...wrap.slice(1), ...(wrap.length ? [process.execPath] : []),...leaderExecArgv([]), ...(process.env.LW_LEADER_FLAGS?.split(' ').filter(Boolean) ?? []), ...prof, BIN, 'run', '--until-idle'], { env: { ...leaderEnv(process.env, { tls: false }), LIGHTWORKER_HOME: h.home, LIGHTWORKER_NO_BUILD_CHECK: '1' }, stdio: process.env.LEADER_STDIO === 'inherit' ? 'inherit' : 'ignore' });
let hwm = 0;
let anon = 0;
let cpu = 0;
let userMs = 0;
let helperPid = 0;
let helperCpu = 0;
let helperHwm = 0;
const cpuOf = (pid: number) => {
  const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
const timer = setInterval(() => {
  try {
    if (!helperPid) {
      for (const t of readdirSync(`/proc/${leader.pid}/task`)) {
        for (const c of readFileSync(`/proc/${leader.pid}/task/${t}/children`, 'utf8').trim().split(' ').filter(Boolean)) {
          if (readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('spawner-helper')) helperPid = Number(c);
        }
      }
    }
    if (helperPid) {
      helperCpu = cpuOf(helperPid);
      helperHwm = Math.max(helperHwm, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${helperPid}/status`, 'utf8'))![1]));
    }
  } catch {
    // gone
  }
  try {
    hwm = Math.max(hwm, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${leader.pid}/status`, 'utf8'))![1]));
    anon = Math.max(anon, Number(/^Anonymous:\s+(\d+)/m.exec(readFileSync(`/proc/${leader.pid}/smaps_rollup`, 'utf8'))![1]));
    const st = readFileSync(`/proc/${leader.pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    cpu = (Number(f[11]) + Number(f[12])) * 10;
    userMs = Number(f[11]) * 10;
  } catch {
    // exited
  }
}, 5);
await exited(leader);
clearInterval(timer);
process.stdout.write(`drain ${N}: ${((performance.now() - t) / 1000).toFixed(2)} s, leader CPU ${cpu} ms (user ${userMs}, ${(cpu / N).toFixed(1)} ms/task incl. start), peak RSS ${(hwm / 1024).toFixed(1)} MiB, private ${(anon / 1024).toFixed(1)} MiB; helper CPU ${helperCpu} ms, peak RSS ${(helperHwm / 1024).toFixed(1)} MiB\n`);
{
  const r = h.engine.db.prepare("SELECT MIN(ts) AS first, MAX(ts) AS last FROM events WHERE type = 'task.status'").get() as { first: number; last: number };
  const claim = h.engine.db.prepare("SELECT MIN(ts) AS c FROM events WHERE type = 'task.status' AND json_extract(payload, '$.to') = 'starting'").get() as { c: number };
  const rows = h.engine.db.prepare("SELECT task_id AS id, json_extract(payload, '$.to') AS st, ts FROM events WHERE type = 'task.status' ORDER BY seq").all() as { id: string; st: string; ts: number }[];
  const per = new Map<string, Record<string, number>>();
  for (const r2 of rows) per.set(r2.id, { ...(per.get(r2.id) ?? {}), [r2.st]: r2.ts });
  const med = (f: (x: Record<string, number>) => number) => { const v = [...per.values()].map(f).filter((x) => Number.isFinite(x)).sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };
  process.stdout.write(`per task p50: claim → spawned ${med((x) => x.running - x.starting)} ms, spawned → verifying ${med((x) => x.verifying - x.running)} ms, verifying → completed ${med((x) => x.completed - x.verifying)} ms, claim → completed ${med((x) => x.completed - x.starting)} ms\n`);
  process.stdout.write(`timeline: start → first claim ${claim.c - t0Wall} ms, first claim → last end ${r.last - claim.c} ms, last end → exit ${Date.now() - r.last} ms (wall)\n`);
}
h.cleanup();
const files = readdirSync(out).filter((f) => f.endsWith('.cpuprofile'));
if (files.length) {
  const p = JSON.parse(readFileSync(join(out, files.sort().at(-1)!), 'utf8')) as { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const byFile = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const n = byId.get(id)!;
    const dt = p.timeDeltas[i] / 1000;
    const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    const file = n.callFrame.url.split('/').slice(-1)[0] || n.callFrame.functionName;
    byFile.set(file, (byFile.get(file) ?? 0) + dt);
  });
  // Self time by what it serves, found by walking up each sample's stack.
  const parent = new Map<number, number>();
  for (const n of p.nodes as { id: number; children?: number[] }[]) for (const c of n.children ?? []) parent.set(c, n.id);
  const category = (id: number): string => {
    const leaf = byId.get(id)!.callFrame;
    if (leaf.functionName === '(idle)') return 'idle';
    if (leaf.functionName === '(garbage collector)') return 'GC';
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      if (f.url.includes('better-sqlite3')) return 'SQLite (better-sqlite3)';
      if (/^(spawnProcess|spawnDirect|runTree|sweepTrees|scanTrees)$/.test(f.functionName)) return 'process trees (spawn, IPC, sweep)';
      if (f.url.startsWith('node:vm') || f.functionName === 'compileForInternalLoader' || f.functionName === 'runCached') return 'start-up (compile, load)';
    }
    if (!leaf.url || leaf.url.startsWith('node:')) return /^(mkdir|open|close|read|write|stat|lstat|rename|unlink|rm|readdir|fstat)/i.test(leaf.functionName) ? 'file system calls' : 'node internals';
    return 'LightWorker JS';
  };
  // Inclusive time per LightWorker function (each function once per sample), when PROFILE_INCLUSIVE is set.
  if (process.env.PROFILE_INCLUSIVE) {
    const incl = new Map<string, number>();
    p.samples.forEach((id, i) => {
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const f = byId.get(cur)!.callFrame;
        if (!f.url.includes('cli.cjs')) continue;
        const k = `${f.functionName || '(anon)'}:${f.lineNumber}`;
        if (!seen.has(k)) incl.set(k, (incl.get(k) ?? 0) + p.timeDeltas[i] / 1000);
        seen.add(k);
      }
    });
    for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_INCLUSIVE))) process.stdout.write(`  incl ${v.toFixed(1).padStart(7)} ms  ${k}\n`);
  }
  // SQLite time by the LightWorker function that called it (PROFILE_SQL=N rows).
  if (process.env.PROFILE_SQL) {
    const bySql = new Map<string, number>();
    p.samples.forEach((id, i) => {
      let inSql = false;
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const f = byId.get(cur)!.callFrame;
        if (f.url.includes('better-sqlite3')) inSql = true;
        else if (inSql && f.url.includes('cli.cjs') && !/^(prep|get|all|run|writeTx|write|transaction|sqliteTransaction)$/.test(f.functionName)) {
          const k = `${f.functionName || '(anon)'}:${f.lineNumber}`;
          bySql.set(k, (bySql.get(k) ?? 0) + p.timeDeltas[i] / 1000);
          break;
        }
      }
    });
    for (const [k, v] of [...bySql].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_SQL))) process.stdout.write(`  sql ${v.toFixed(1).padStart(7)} ms  ${k}\n`);
  }
  const byCategory = new Map<string, number>();
  p.samples.forEach((id, i) => byCategory.set(category(id), (byCategory.get(category(id)) ?? 0) + p.timeDeltas[i] / 1000));
  for (const [k, v] of [...byCategory].sort((a, b) => b[1] - a[1])) process.stdout.write(`  category ${v.toFixed(0).padStart(6)} ms  ${k}\n`);
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(`profile ${files.at(-1)}: ${total.toFixed(0)} ms sampled\n`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) process.stdout.write(`  ${v.toFixed(1).padStart(7)} ms ${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}\n`);
  for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 10)) process.stdout.write(`  file ${v.toFixed(1).padStart(7)} ms  ${k}\n`);
}
process.exit(0);
