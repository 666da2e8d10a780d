/**
 * The PostgreSQL connection thread (started by store/pg/bridge.ts). It owns two `pg` clients: one for the
 * engine's queries, answered one at a time to a main thread blocked in Atomics.wait, and, unless the store
 * polls instead (`[store] listen = false`, or a LISTEN whose own probe never arrived), one that LISTENs for
 * other processes' commits and posts each notification to the main thread asynchronously.
 * Result types follow SQLite's: bigint and numeric as JS numbers, booleans as 1/0.
 *
 * Built on its own into out/main/pg-thread.cjs (electron.vite.config.ts) and run from its text with
 * `eval: true`, so it imports nothing but Node built-ins: `pg` is loaded from the path the main thread
 * resolved (inside the packaged app's asar, where a worker cannot load a file by path).
 */
import { createRequire } from 'node:module';
import { parentPort, workerData as rawWorkerData, type MessagePort } from 'node:worker_threads';
import type { Client as PgClient, ClientConfig, CustomTypesConfig, Notification, QueryResult } from 'pg';
import type { PgQuery, ThreadData, ThreadReply, ThreadRequest } from './thread-protocol.js';

type PgModule = typeof import('pg');

const workerData = rawWorkerData as ThreadData;
const pg = createRequire(workerData.pgPath)(workerData.pgPath) as PgModule;
const flag = new Int32Array(workerData.shared);
const port: MessagePort = workerData.port;
const toMain = parentPort!;

const INT8_OID = 20;
const NUMERIC_OID = 1700;
const BOOL_OID = 16;

const types: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (v: string | null) => (v === null ? null : Number(v));
    if (oid === BOOL_OID) return (v: string | null) => (v === null ? null : v === 't' || v === 'true' ? 1 : 0);
    return pg.types.getTypeParser(oid, format);
  }) as CustomTypesConfig['getTypeParser'],
};

let client: PgClient | null = null;
let listener: PgClient | null = null;
let broken: Error | null = null;
let ownPid = '';
/** Prepared-statement names by SQL text, per query connection (cleared when it is replaced). */
const names = new Map<string, string>();

function reply(msg: ThreadReply): void {
  port.postMessage(msg);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

async function openClient(cfg: ClientConfig): Promise<PgClient> {
  const c = new pg.Client({ ...cfg, types });
  c.on('error', (e) => {
    if (c === client) broken = e;
  });
  // A connection the server ended (terminated, restarted): the next call between transactions replaces it.
  c.on('end', () => {
    if (c === client && !broken) broken = new Error('the server ended the connection');
  });
  await c.connect();
  await c.query('SET search_path TO ' + workerData.schemaIdent + ', public');
  return c;
}

/** Values as `pg` takes them: a Uint8Array that crossed the thread boundary becomes a Buffer again. */
function toPgValues(list: unknown[]): unknown[] {
  return list.map((v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v));
}

async function runQuery(c: PgClient, q: PgQuery): Promise<QueryResult | QueryResult[]> {
  // The simple protocol (several statements, no parameters) returns one result per statement.
  if (q.values === undefined) return (await c.query(q.text)) as QueryResult | QueryResult[];
  let name = names.get(q.text);
  if (!name) {
    name = 'lw' + names.size;
    names.set(q.text, name);
  }
  return c.query({ name, text: q.text, values: toPgValues(q.values) });
}

/**
 * The server was found unreachable (a connect timed out, a probe got no answer): until `until`, a new
 * connection is not even tried, and after it only briefly. The main thread is blocked for as long as a
 * connect takes, and a runner's timers each make a call: ten-second connects back to back would keep its
 * event loop from ever reading a signal (SIGTERM) or its spawner helper's messages.
 */
let unreachable: { message: string; until: number } | null = null;
const UNREACHABLE_PAUSE_MS = 1000;

function noteUnreachable(message: string): void {
  unreachable = { message, until: Date.now() + UNREACHABLE_PAUSE_MS };
}

async function connectQuery(): Promise<void> {
  // The old connection is dropped first: its late 'end' must not mark the new one broken.
  const old = client;
  client = null;
  if (old) old.end().catch(() => undefined);
  names.clear();
  const known = unreachable;
  if (known && Date.now() < known.until) throw Object.assign(new Error(`the PostgreSQL server is unreachable (ETIMEDOUT: ${known.message})`), { code: 'ETIMEDOUT' });
  let c: PgClient;
  try {
    c = await openClient(known ? { ...workerData.cfg, connectionTimeoutMillis: PROBE_TIMEOUT_MS } : workerData.cfg);
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (!(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))) {
      noteUnreachable((e as Error).message);
      throw Object.assign(new Error(`cannot reach the PostgreSQL server (ETIMEDOUT: ${(e as Error).message})`), { code: 'ETIMEDOUT' });
    }
    throw e;
  }
  unreachable = null;
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  ownPid = String(pid);
  client = c;
  broken = null;
}

/**
 * LISTEN on a second connection. A LISTEN can succeed and still never deliver (through a transaction-mode
 * pooler the session that listened is not ours after the statement): a probe notification of our own must
 * come back within `probeMs`, or the listener is dropped and false tells the store to poll instead.
 */
async function listen(): Promise<boolean> {
  if (listener) return true;
  const l = await openClient(workerData.cfg);
  const probe = 'probe:' + ownPid + ':' + Math.random().toString(36).slice(2);
  let probed: (() => void) | null = null;
  // Our own commits carry our query connection's backend pid: the engine publishes those itself. A probe
  // is nobody's commit.
  l.on('notification', (n: Notification) => {
    if (n.payload === probe) return probed?.();
    if (n.payload?.startsWith('probe:')) return;
    if (n.payload !== ownPid) toMain.postMessage({ notify: true });
  });
  l.on('error', () => {
    if (listener !== l) return;
    listener = null;
    toMain.postMessage({ listenLost: true });
  });
  await l.query('LISTEN ' + workerData.channelIdent);
  const arrived = new Promise<boolean>((resolve) => {
    probed = () => resolve(true);
    setTimeout(() => resolve(false), workerData.probeMs).unref();
  });
  if (!client) throw Object.assign(new Error('the PostgreSQL connection is not open'), { code: 'connection_lost' });
  await client.query('SELECT pg_notify($1, $2)', [workerData.channel, probe]);
  if (!(await arrived)) {
    l.end().catch(() => undefined);
    return false;
  }
  listener = l;
  return true;
}

/** A failure the connection itself caused (no SQLSTATE, or the server ending it), not the statement. */
function isConnectionFailure(code: unknown): boolean {
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P0)/.test(code);
}

/** A call unanswered this long has its server asked, on a connection of its own, whether it works on it. */
const PROBE_AFTER_MS = 1500;
/** How long the probe (connect and one query) may take before the server counts as unreachable. */
const PROBE_TIMEOUT_MS = 2500;
const PROBE_EVERY_MS = 1000;

/**
 * The main thread blocks (Atomics.wait) until a call is answered, so a call that waits for an answer that
 * will never come holds the whole runner — its beats, its SIGTERM — until the bridge's call timeout (120 s).
 * Two such waits are told apart from a slow statement here: the server does not answer at all, twice in a row (a
 * black hole: the probe cannot connect or gets no answer), or the server is idle on our backend since before the query
 * was sent, twice in a row (the network lost the query: nothing will ever answer it). Either way the
 * connection is dropped and the call fails at once: 'ETIMEDOUT' (the store unreachable) or 'connection_lost'
 * (sent again on a new connection). A statement the server is running, or waiting on a lock, is left alone.
 */
function watchCall(c: PgClient): { gaveUp(): { message: string; code: string } | null; stop(): void } {
  const sentAt = Date.now();
  const backend = Number(ownPid);
  let given: { message: string; code: string } | null = null;
  let stopped = false;
  let idleSince: string | null = null;
  let silent = 0;
  let timer: NodeJS.Timeout | null = null;
  const giveUp = (message: string, code: string) => {
    if (stopped) return;
    given = { message, code };
    (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  };
  const look = async () => {
    timer = null;
    const verdict = await probe(backend, sentAt);
    if (stopped) return;
    // Twice in a row: one probe slow to connect on a loaded host is no proof the call will never be answered.
    if (verdict.unreachable && ++silent >= 2) {
      noteUnreachable(verdict.unreachable);
      return giveUp(`the PostgreSQL server did not answer for ${Math.round((Date.now() - sentAt) / 1000)} s (ETIMEDOUT: ${verdict.unreachable})`, 'ETIMEDOUT');
    }
    if (!verdict.unreachable) silent = 0;
    if (verdict.idleSince !== null && verdict.idleSince === idleSince) return giveUp('the PostgreSQL connection lost a query (the server never received it)', 'connection_lost');
    idleSince = verdict.idleSince;
    timer = setTimeout(() => void look(), PROBE_EVERY_MS);
  };
  if (backend > 0) timer = setTimeout(() => void look(), PROBE_AFTER_MS);
  return {
    gaveUp: () => given,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** `unreachable`: why the server could not be asked; `idleSince`: when our backend went idle, if it went idle before the call was sent. */
async function probe(backend: number, sentAt: number): Promise<{ unreachable: string | null; idleSince: string | null }> {
  const p = new pg.Client({ ...workerData.cfg, types, connectionTimeoutMillis: PROBE_TIMEOUT_MS, query_timeout: PROBE_TIMEOUT_MS });
  p.on('error', () => undefined);
  try {
    await p.connect();
    const waited = Date.now() - sentAt;
    const r = await p.query<{ state: string | null; since: string; idle_ms: number }>(
      'SELECT state, state_change::text AS since, (extract(epoch FROM clock_timestamp() - state_change) * 1000)::float8 AS idle_ms FROM pg_stat_activity WHERE pid = $1',
      [backend],
    );
    const row = r.rows[0];
    if (!row) return { unreachable: 'its backend is gone', idleSince: null };
    const idleBefore = row.state !== null && row.state.startsWith('idle') && row.idle_ms >= waited;
    return { unreachable: null, idleSince: idleBefore ? row.since : null };
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    // The server answered (an error of its own, e.g. too many connections): it is there, just busy.
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return { unreachable: null, idleSince: null };
    // Nobody answers on it: drop the socket rather than wait to say goodbye.
    (p as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    return { unreachable: (e as Error).message, idleSince: null };
  } finally {
    p.end().catch(() => undefined);
  }
}

async function handle(m: ThreadRequest): Promise<ThreadReply> {
  if (m.op === 'connect') {
    await connectQuery();
    return { ok: true };
  }
  if (m.op === 'listen') return { ok: true, listening: await listen() };
  if (m.op === 'end') {
    await Promise.allSettled([client?.end(), listener?.end()]);
    client = listener = null;
    return { ok: true };
  }
  if (broken) {
    // A lost connection is replaced only between transactions: one cut mid-transaction was rolled back
    // by the server, and its caller must hear so.
    const e = broken;
    if (!m.fresh) throw Object.assign(new Error('the PostgreSQL connection was lost: ' + e.message), { code: 'connection_lost' });
    await connectQuery();
  }
  if (!client) throw Object.assign(new Error('the PostgreSQL connection is not open'), { code: 'connection_lost' });
  let last: QueryResult | QueryResult[] | null = null;
  const watch = watchCall(client);
  try {
    for (const q of m.queries) last = await runQuery(client, q);
  } catch (e) {
    const given = watch.gaveUp();
    const err = given ? Object.assign(new Error(given.message), { code: given.code }) : (e as Error);
    // The next call between transactions reconnects, even before the client's own 'error' or 'end' arrives.
    if (isConnectionFailure((err as { code?: unknown } | null)?.code)) broken = broken ?? err;
    throw err;
  } finally {
    watch.stop();
  }
  const result = Array.isArray(last) ? last[last.length - 1] : last;
  return { ok: true, rows: result ? (result.rows as Record<string, unknown>[]) : [], count: result ? result.rowCount : 0 };
}

port.on('message', (m: ThreadRequest) => {
  handle(m).then(reply, (e: unknown) => {
    const err = e as { message?: unknown; code?: string; detail?: string; constraint?: string } | null;
    reply({ ok: false, error: { message: String(err ? err.message : err), code: err?.code, detail: err?.detail, constraint: err?.constraint } });
  });
});
