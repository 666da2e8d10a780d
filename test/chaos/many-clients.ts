// Scenario: many `lightworker mcp` processes (agent clients) on one home at once, a `lightworker run` leading.
// Every client calls delegate_task at the same moment, then wait_tasks until its task settles. Nothing may be
// refused or answered `internal`, no stack trace may reach stderr, the live leader must keep its lease (so no
// task is orphaned by a false "runner died"), and every task must complete. Also measured: the memory each
// MCP server costs against the floor (a bare Node process; one with the MCP SDK serving stdio).
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withLab, type Lab } from './lab.js';
import { openDbReadOnly, percentile, readLease, readTasks } from './observe.js';
import { sleep } from './rng.js';

export interface ManyClientsOptions {
  clients: number;
  log: (line: string) => void;
  /** How long each worker turn takes (mock worker), ms. */
  taskMs?: number;
  /**
   * Hold the store's write lock from another connection for this long as the clients delegate (a backup, a
   * `sqlite3` shell, a long transaction elsewhere): longer than SQLite's busy timeout, every writer must
   * wait its turn past it. Default 0.
   */
  holdLockMs?: number;
}

export interface ManyClientsFigures {
  clients: number;
  tasks: number;
  /** delegate_task calls answered with an error (any code) or not answered. */
  refused: number;
  /** Answers (any tool) with code `internal`, plus stack traces printed on an MCP server's or the leader's stderr. */
  internal: number;
  /** Tasks that ended orphaned (the leader never died: each is a false "runner died"). */
  falseOrphans: number;
  /** scheduler.leader events naming another holder than the live leader, after it took the lead. */
  leaseMoves: number;
  /** Tasks not completed once every client's wait settled (or gave up). */
  notCompleted: number;
  /** An MCP server's memory after its task settled, MiB: median and maximum RSS, median peak RSS, median PSS. */
  rssMiB: { median: number; max: number; peakMedian: number; pssMedian: number };
  /** `node -e` idling, and Node with the MCP SDK's Server connected to stdio, MiB (RSS and PSS). */
  floorMiB: Floor;
  /** The oldest the live leader's heartbeat was seen while the clients worked, ms (its lease ttl: 3000). */
  maxBeatAgeMs: number;
  /** delegate_task latency p50 / p95 / max, ms. */
  delegateMs: { p50: number; p95: number; max: number };
  durationS: number;
  notes: string[];
}

const SDK_FLOOR_SCRIPT = `
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
const s = new Server({ name: 'floor', version: '1' }, { capabilities: { tools: {} } });
await s.connect(new StdioServerTransport());
process.stderr.write('ready\\n');
`;

/**
 * Memory of a process, MiB (0 when unreadable): resident (VmRSS), its peak (VmHWM), and proportional (PSS:
 * pages shared with other processes, such as the node binary's, counted once across them: what each of
 * many servers really adds).
 */
export function memoryOf(pid: number): { rss: number; hwm: number; pss: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (text: string, k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0) / 1024;
    let pss = 0;
    try {
      pss = kb(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss');
    } catch {
      // no smaps_rollup (an old kernel): PSS stays 0
    }
    return { rss: kb(status, 'VmRSS'), hwm: kb(status, 'VmHWM'), pss };
  } catch {
    return { rss: 0, hwm: 0, pss: 0 };
  }
}

/** Resident memory of a Node process started with `args`, once it printed `ready` on stderr (or after 300 ms). */
async function floorOf(args: string[], cwd: string): Promise<{ rss: number; hwm: number; pss: number }> {
  const p = spawn(process.execPath, args, { cwd, stdio: ['pipe', 'ignore', 'pipe'] });
  try {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 5000);
      p.stderr.on('data', (d: Buffer) => d.toString().includes('ready') && (clearTimeout(t), resolve()));
    });
    await sleep(300);
    return memoryOf(p.pid!);
  } finally {
    p.kill('SIGKILL');
  }
}

/** The memory floor of an MCP server process on this machine, MiB (RSS and PSS). */
export async function measureFloor(): Promise<Floor> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const node = await floorOf(['-e', "process.stderr.write('ready\\n'); setInterval(() => {}, 1e6)"], root);
  const sdk = await floorOf(['--input-type=module', '-e', SDK_FLOOR_SCRIPT], root);
  return { node: round(node.rss), sdk: round(sdk.rss), nodePss: round(node.pss), sdkPss: round(sdk.pss) };
}

export interface Floor {
  node: number;
  sdk: number;
  nodePss: number;
  sdkPss: number;
}

const round = (v: number) => Math.round(v * 10) / 10;

interface Answer {
  result?: { isError?: boolean; structuredContent?: Record<string, unknown> };
  error?: { code: number; message: string };
}

/** A `lightworker mcp` child spoken to in newline-delimited JSON-RPC. */
class McpClient {
  private buf = '';
  private next = 1;
  private readonly pending = new Map<string, (a: Answer) => void>();
  stderr = '';
  constructor(readonly proc: ChildProcess) {
    proc.stdout!.setEncoding('utf8');
    proc.stdout!.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        try {
          const m = JSON.parse(line) as Answer & { id?: string };
          if (m.id !== undefined) this.pending.get(m.id)?.(m);
        } catch {
          this.stderr += `[non-JSON stdout] ${line}\n`;
        }
      }
    });
    proc.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    proc.once('exit', () => {
      for (const r of this.pending.values()) r({ error: { code: -1, message: 'server exited' } });
    });
  }

  request(method: string, params: unknown, timeoutMs = 120_000): Promise<Answer> {
    const id = `m${this.next++}`;
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.pending.delete(id);
        resolve({ error: { code: -2, message: `no answer within ${timeoutMs} ms` } });
      }, timeoutMs);
      this.pending.set(id, (a) => {
        clearTimeout(t);
        this.pending.delete(id);
        resolve(a);
      });
      this.proc.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  async initialize(): Promise<void> {
    const a = await this.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'many-clients', version: '1' } });
    if (a.error) throw new Error(`initialize failed: ${a.error.message}; stderr: ${this.stderr.slice(-500)}`);
    this.proc.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  }

  callTool(name: string, args: unknown): Promise<Answer> {
    return this.request('tools/call', { name, arguments: args });
  }
}

const codeOf = (a: Answer): string | null => (a.error ? `jsonrpc ${a.error.code}` : a.result?.isError ? String(a.result.structuredContent?.code ?? 'error') : null);
const STACK = /^\s+at .+[:(]/m;

/** Wait for `pred`, polling; false after `ms`. */
async function until(pred: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(50);
  }
  return pred();
}

/** Run the many-clients scenario in its own lab. */
export async function runManyClients(o: ManyClientsOptions): Promise<ManyClientsFigures> {
  const started = Date.now();
  const floorMiB = await measureFloor();
  return withLab('many', {}, async (lab) => {
    const notes: string[] = [];
    const db = openDbReadOnly(lab.home);
    try {
      const leader = lab.start(['run']);
      let leaderErr = '';
      leader.stderr!.on('data', (d: Buffer) => (leaderErr += d.toString()));
      if (!(await until(() => readLease(db)?.pid === leader.pid, 30_000))) throw new Error(`the run process never took the lease; stderr: ${leaderErr.slice(-1000)}`);
      const firstLeaderSeq = (db.prepare(`SELECT MAX(seq) AS s FROM events WHERE type = 'scheduler.leader'`).get() as { s: number }).s;
      let maxBeatAgeMs = 0;
      const watcher = setInterval(() => {
        const l = db.prepare(`SELECT heartbeat_at AS h FROM leases WHERE name = 'scheduler'`).get() as { h: number } | undefined;
        if (l) maxBeatAgeMs = Math.max(maxBeatAgeMs, Date.now() - l.h);
      }, 50);
      const clients = await startClients(lab, o.clients).catch((e) => {
        clearInterval(watcher);
        throw e;
      });
      o.log(`many-clients: ${clients.length} MCP servers initialized; delegating …`);
      const release = holdWriteLock(lab.home, o.holdLockMs ?? 0);
      const results = await Promise.all(clients.map((c, i) => delegateAndWait(c, lab, i, o.taskMs ?? 150))).finally(() => {
        clearInterval(watcher);
        release();
      });
      const rss = clients.map((c) => memoryOf(c.proc.pid!));
      const refused = results.filter((r) => r.refusal !== null);
      const codes = new Map<string, number>();
      for (const r of refused) codes.set(r.refusal!, (codes.get(r.refusal!) ?? 0) + 1);
      if (refused.length) notes.push(`refused delegate_task: ${[...codes].map(([c, n]) => `${c} ×${n}`).join(', ')}; first: ${refused[0].message}`);
      const internalAnswers = results.reduce((n, r) => n + r.internal, 0);
      const traces = clients.filter((c) => STACK.test(c.stderr)).length + (STACK.test(leaderErr) ? 1 : 0);
      if (traces) notes.push(`stack traces on stderr of ${traces} processes; first: ${(clients.find((c) => STACK.test(c.stderr))?.stderr ?? leaderErr).slice(0, 600)}`);
      const leaderAlive = leader.exitCode === null && leader.signalCode === null;
      if (!leaderAlive) notes.push(`the leader exited (${leader.exitCode ?? leader.signalCode}); stderr: ${leaderErr.slice(-600)}`);
      const moves = db.prepare(`SELECT payload FROM events WHERE type = 'scheduler.leader' AND seq > ?`).all(firstLeaderSeq) as { payload: string }[];
      if (moves.length) notes.push(`lease moved to ${moves.map((m) => JSON.parse(m.payload).pid).join(', ')} while ${leader.pid} lived`);
      const ids = new Set(results.map((r) => r.id).filter((id): id is string => id !== null));
      const tasks = readTasks(db).filter((t) => ids.has(t.id));
      const orphaned = tasks.filter((t) => t.status === 'orphaned');
      const notCompleted = tasks.filter((t) => t.status !== 'completed');
      if (notCompleted.length) notes.push(`${notCompleted.length} tasks not completed: ${[...new Set(notCompleted.map((t) => t.status))].join(', ')}`);
      const ms = results.map((r) => r.delegateMs);
      const rssList = rss.map((m) => m.rss);
      return {
        clients: clients.length,
        tasks: tasks.length,
        refused: refused.length,
        internal: internalAnswers + traces,
        falseOrphans: orphaned.length,
        leaseMoves: moves.length,
        notCompleted: notCompleted.length + (ids.size - tasks.length),
        rssMiB: {
          median: round(percentile(rssList, 50) ?? 0),
          max: round(Math.max(0, ...rssList)),
          peakMedian: round(percentile(rss.map((m) => m.hwm), 50) ?? 0),
          pssMedian: round(percentile(rss.map((m) => m.pss), 50) ?? 0),
        },
        floorMiB,
        maxBeatAgeMs,
        delegateMs: { p50: percentile(ms, 50) ?? 0, p95: percentile(ms, 95) ?? 0, max: Math.max(0, ...ms) },
        durationS: Math.round((Date.now() - started) / 1000),
        notes,
      };
    } finally {
      db.close();
    }
  });
}

/** Take the write lock of the home's database for `ms` (from a connection of its own); returns a release for cleanup. */
function holdWriteLock(home: string, ms: number): () => void {
  if (ms <= 0) return () => undefined;
  const db = new Database(join(home, 'lightworker.db'));
  db.exec('BEGIN IMMEDIATE');
  const release = () => {
    clearTimeout(timer);
    if (db.open) {
      db.exec('ROLLBACK');
      db.close();
    }
  };
  const timer = setTimeout(release, ms);
  return release;
}

/** Start `n` MCP servers and initialize them, a few at a time (a burst of 100 Node starts on 2 cores is its own test). */
async function startClients(lab: Lab, n: number): Promise<McpClient[]> {
  const clients = Array.from({ length: n }, () => new McpClient(lab.start(['mcp'], 'pipe')));
  await Promise.all(clients.map((c) => c.initialize()));
  return clients;
}

interface ClientResult {
  id: string | null;
  refusal: string | null;
  message: string;
  internal: number;
  delegateMs: number;
}

async function delegateAndWait(c: McpClient, lab: Lab, i: number, taskMs: number): Promise<ClientResult> {
  const t0 = Date.now();
  const d = await c.callTool('delegate_task', { name: `client ${i}`, objective: `many clients: task of client ${i}`, workspace: lab.repo, kind: 'explore', worker: 'mock', metadata: { mock: { sleep_ms: taskMs } } });
  const delegateMs = Date.now() - t0;
  let internal = codeOf(d) === 'internal' ? 1 : 0;
  const refusal = codeOf(d);
  if (refusal !== null) return { id: null, refusal, message: JSON.stringify(d.error ?? d.result?.structuredContent).slice(0, 300), internal, delegateMs };
  const id = (d.result!.structuredContent!.task as { id: string }).id;
  for (let round = 0; round < 6; round++) {
    const w = await c.callTool('wait_tasks', { ids: [id], timeout_s: 50 });
    if (codeOf(w) === 'internal') internal++;
    if (codeOf(w) === null && w.result!.structuredContent!.reason !== 'timeout') break;
  }
  return { id, refusal: null, message: '', internal, delegateMs };
}
