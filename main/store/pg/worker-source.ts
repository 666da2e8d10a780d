/**
 * The PostgreSQL connection thread (plain CommonJS, run with `new Worker(source, { eval: true })`, so the
 * build needs no extra entry). It owns two `pg` clients: one for the engine's queries, answered one at a
 * time to a main thread blocked in Atomics.wait (store/pg/bridge.ts), and one that LISTENs for other
 * processes' commits and posts each notification to the main thread asynchronously.
 * Result types follow SQLite's: bigint and numeric as JS numbers, booleans as 1/0.
 */
export const WORKER_SOURCE = String.raw`
const { workerData, parentPort } = require('node:worker_threads');
const pg = require(workerData.pgPath);
const flag = new Int32Array(workerData.shared);
const port = workerData.port;
const types = {
  getTypeParser(oid, format) {
    if (oid === 20 || oid === 1700) return (v) => (v === null ? null : Number(v));
    if (oid === 16) return (v) => (v === null ? null : v === 't' || v === 'true' ? 1 : 0);
    return pg.types.getTypeParser(oid, format);
  },
};
let client = null;
let listener = null;
let broken = null;
let ownPid = '';
const names = new Map();

function reply(msg) {
  port.postMessage(msg);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

async function open(cfg) {
  const c = new pg.Client({ ...cfg, types });
  c.on('error', (e) => { if (c === client) broken = e; });
  // A connection the server ended (terminated, restarted): the next call between transactions replaces it.
  c.on('end', () => { if (c === client && !broken) broken = new Error('the server ended the connection'); });
  await c.connect();
  await c.query('SET search_path TO ' + workerData.schemaIdent + ', public');
  return c;
}

function values(list) {
  return (list || []).map((v) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v));
}

async function run(q) {
  if (q.values === undefined) return client.query(q.text);
  let name = names.get(q.text);
  if (!name) {
    name = 'lw' + names.size;
    names.set(q.text, name);
  }
  return client.query({ name, text: q.text, values: values(q.values) });
}

async function connectQuery() {
  // The old connection is dropped first: its late 'end' must not mark the new one broken.
  const old = client;
  client = null;
  if (old) old.end().catch(() => undefined);
  names.clear();
  const c = await open(workerData.cfg);
  ownPid = String((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  client = c;
  broken = null;
}

async function handle(m) {
  if (m.op === 'connect') {
    await connectQuery();
    return { ok: true };
  }
  if (m.op === 'listen') {
    if (!listener) {
      listener = await open(workerData.cfg);
      // Our own commits carry our query connection's backend pid: the engine publishes those itself.
      listener.on('notification', (n) => {
        if (n.payload !== ownPid) parentPort.postMessage({ notify: true });
      });
      listener.on('error', () => {
        listener = null;
        parentPort.postMessage({ listenLost: true });
      });
      await listener.query('LISTEN ' + workerData.channelIdent);
    }
    return { ok: true };
  }
  if (m.op === 'end') {
    await Promise.allSettled([client && client.end(), listener && listener.end()]);
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
  let last = null;
  try {
    for (const q of m.queries) last = await run(q);
  } catch (e) {
    // The connection itself failed (no SQLSTATE, or the server ending it): the next call between
    // transactions reconnects, even before the client's own 'error' or 'end' arrives.
    const code = e && e.code;
    if (!code || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P0)/.test(code)) broken = broken || e;
    throw e;
  }
  if (Array.isArray(last)) last = last[last.length - 1];
  return { ok: true, rows: last ? last.rows : [], count: last ? last.rowCount : 0 };
}

port.on('message', (m) => {
  handle(m).then(reply, (e) =>
    reply({ ok: false, error: { message: String(e && e.message), code: e && e.code, detail: e && e.detail, constraint: e && e.constraint } }),
  );
});
`;
