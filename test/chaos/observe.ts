// What the chaos suite measures from outside the engine: live processes (/proc), the database (read
// only) and the files under a home. Nothing here changes LightWorker's state.
import Database from 'better-sqlite3';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const END_STATES = new Set(['completed', 'failed', 'cancelled', 'timed_out', 'blocked', 'orphaned', 'accepted']);
export const ACTIVE_STATES = new Set(['starting', 'running', 'verifying']);

export interface MarkedProcess {
  pid: number;
  cmd: string;
  why: string;
}

function readProc(pid: number, file: string): string | null {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'latin1');
  } catch {
    return null;
  }
}

function isZombie(pid: number): boolean {
  const stat = readProc(pid, 'stat');
  return !stat || stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
}

/**
 * Live (non-zombie) processes carrying one of the markers: CHAOS_RUN=<runId> (the chaos agent and all it
 * started), LIGHTWORKER_TASK_ID of one of `taskIds`, or — with `home` — LIGHTWORKER_HOME=<home> or the
 * home path in the command line (leaders, MCP background runners). Linux only; elsewhere returns [].
 */
export function findMarkedProcesses(m: { runId?: string; taskIds?: Set<string>; home?: string }): MarkedProcess[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: MarkedProcess[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    if (pid === process.pid) continue;
    const environ = readProc(pid, 'environ');
    if (environ === null) continue;
    const vars = environ.split('\0');
    const cmd = (readProc(pid, 'cmdline') ?? '').split('\0').join(' ').trim();
    let why = '';
    if (m.runId && vars.includes(`CHAOS_RUN=${m.runId}`)) why = 'CHAOS_RUN';
    else if (m.taskIds && vars.some((v) => v.startsWith('LIGHTWORKER_TASK_ID=') && m.taskIds!.has(v.slice(20)))) why = 'LIGHTWORKER_TASK_ID';
    else if (m.home && (vars.includes(`LIGHTWORKER_HOME=${m.home}`) || cmd.includes(m.home))) why = 'home';
    if (why && !isZombie(pid)) found.push({ pid, cmd: cmd.slice(0, 200), why });
  }
  return found;
}

export function killPids(pids: number[], signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** The home's database, read only (a second connection; WAL lets it read while others write). */
export function openDbReadOnly(home: string): Database.Database {
  const db = new Database(join(home, 'lightworker.db'), { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  return db;
}

export interface TaskRow {
  id: string;
  status: string;
  attempt: number;
  runner_id: string | null;
  timeout_s: number;
  started_at: number | null;
  updated_at: number;
}

export function readTasks(db: Database.Database): TaskRow[] {
  return db.prepare('SELECT id, status, attempt, runner_id, timeout_s, started_at, updated_at FROM tasks').all() as TaskRow[];
}

export function readLease(db: Database.Database): { holder: string; pid: number; expires_at: number } | null {
  return (db.prepare(`SELECT holder, pid, expires_at FROM leases WHERE name = 'scheduler'`).get() as { holder: string; pid: number; expires_at: number } | undefined) ?? null;
}

/** (task, attempt) pairs the agent's ledger shows started more than once. */
export function countDoubleRuns(ledger: string): { doubleRuns: number; starts: number; pairs: string[] } {
  const seen = new Map<string, number>();
  let starts = 0;
  for (const line of ledger.split('\n')) {
    const [task, attempt] = line.trim().split(' ');
    if (!task || !attempt) continue;
    starts++;
    seen.set(`${task}#${attempt}`, (seen.get(`${task}#${attempt}`) ?? 0) + 1);
  }
  const pairs = [...seen].filter(([, n]) => n > 1).map(([k, n]) => `${k}×${n}`);
  return { doubleRuns: pairs.length, starts, pairs };
}

/** A place that holds text, and the needles found in it. */
export interface Hit {
  where: string;
  needle: string;
}

/** Needles found in `text` (each reported once per place). */
export function findNeedles(text: string, needles: string[], where: string): Hit[] {
  return needles.filter((n) => text.includes(n)).map((needle) => ({ where, needle }));
}

/** Every TEXT (or untyped) column of every table in the database, searched for the needles. */
export function scanDatabase(db: Database.Database, needles: string[]): Hit[] {
  const hits: Hit[] = [];
  const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[];
  for (const { name } of tables) {
    const cols = (db.prepare(`SELECT name, type FROM pragma_table_info(?)`).all(name) as { name: string; type: string }[]).filter(
      (c) => c.type === '' || /TEXT|CHAR|CLOB/i.test(c.type),
    );
    for (const c of cols) {
      const rows = db.prepare(`SELECT "${c.name}" AS v FROM "${name}" WHERE "${c.name}" IS NOT NULL`).raw().all() as [unknown][];
      const text = rows.map(([v]) => (typeof v === 'string' ? v : Buffer.isBuffer(v) ? '' : String(v))).join('\n');
      hits.push(...findNeedles(text, needles, `db ${name}.${c.name}`));
    }
  }
  return hits;
}

/** Every file under `dir` (except the ones `skip` names), searched as UTF-8 and as Latin-1 bytes. */
export function scanFiles(dir: string, needles: string[], skip: (rel: string) => boolean): Hit[] {
  const hits: Hit[] = [];
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const full = join(d, n);
      const rel = relative(dir, full);
      if (skip(rel)) continue;
      let st;
      try {
        st = statSync(full);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(full);
      else if (st.isFile() && st.size < 64 * 1024 * 1024) hits.push(...findNeedles(readFileSync(full, 'latin1'), needles, `file ${rel}`));
    }
  };
  walk(dir);
  return hits;
}

/** p-th percentile (0–100) of a list of numbers; null when empty. */
export function percentile(values: number[], p: number): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
