import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { AppError } from '../../core/errors.js';
import type { PgQuery, ThreadData, ThreadNotice, ThreadReply, ThreadRequest } from './thread-protocol.js';

export type { PgQuery } from './thread-protocol.js';

export interface PgReply {
  rows: Record<string, unknown>[];
  count: number;
}

/** A failed query: PostgreSQL's SQLSTATE in `code` ('23505' unique violation, '40P01' deadlock, …). */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'PgError';
  }
}

export interface BridgeOptions {
  /** node-postgres connection settings (connectionString, …). */
  cfg: Record<string, unknown>;
  /** Quoted schema identifier for search_path. */
  schemaIdent: string;
  /** Quoted LISTEN channel identifier. */
  channelIdent: string;
  /** The channel's name (unquoted, for the LISTEN probe's pg_notify). */
  channel: string;
  /** How long a LISTEN waits for its own probe notification before the store polls instead. */
  probeMs: number;
  /** How long one call may block before the store is declared unavailable. */
  timeoutMs: number;
  /** What to call the server in errors (the URL without its password). */
  label: string;
}

const requireHere = createRequire(import.meta.url);

let threadSource: string | undefined;

/**
 * The connection thread's code (store/pg/connection-thread.ts) as CommonJS text, run with `eval: true`:
 * from the bundle, the file the build wrote beside it (out/main/pg-thread.cjs, read through fs so it works
 * inside the packaged app's asar too); from the sources (tsx, vitest), the TypeScript file compiled with
 * esbuild, the compiler tsx itself runs on. Read once per process.
 */
export function loadThreadSource(): string {
  if (threadSource !== undefined) return threadSource;
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    const esbuild = requireHere('esbuild') as typeof import('esbuild');
    const file = fileURLToPath(new URL('./connection-thread.ts', import.meta.url));
    threadSource = esbuild.buildSync({ entryPoints: [file], bundle: true, platform: 'node', format: 'cjs', write: false, logLevel: 'silent' }).outputFiles[0].text;
  } else {
    // A path string, not a URL: Electron reads inside the asar for paths.
    threadSource = readFileSync(fileURLToPath(new URL('./pg-thread.cjs', import.meta.url)), 'utf8');
  }
  return threadSource;
}

/**
 * Synchronous calls into a PostgreSQL connection held by a worker thread. The engine is written against
 * a synchronous store (better-sqlite3): each call posts its queries to the thread and blocks in
 * Atomics.wait until the thread answers, then takes the answer with receiveMessageOnPort. One call at a
 * time per process, so one connection serves it; a second connection LISTENs, and its notifications
 * arrive as ordinary (asynchronous) messages, `onNotify`.
 */
export class PgBridge {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag: Int32Array;
  private closed = false;
  private closedBecause: string | null = null;
  onNotify: (() => void) | null = null;
  /** The LISTEN connection dropped (notifications stop until `listen()` again). */
  onListenLost: (() => void) | null = null;

  constructor(private readonly opts: BridgeOptions) {
    const shared = new SharedArrayBuffer(4);
    this.flag = new Int32Array(shared);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const workerData: ThreadData = { pgPath: requireHere.resolve('pg'), shared, port: port2, cfg: opts.cfg, schemaIdent: opts.schemaIdent, channelIdent: opts.channelIdent, channel: opts.channel, probeMs: opts.probeMs };
    this.worker = new Worker(loadThreadSource(), {
      eval: true,
      workerData,
      transferList: [port2],
      stdout: false,
      stderr: false,
    });
    this.worker.unref();
    this.worker.on('message', (m: ThreadNotice) => {
      if (m.notify) this.onNotify?.();
      if (m.listenLost) this.onListenLost?.();
    });
    this.worker.on('error', () => {
      // A dead thread shows at the next call (it times out with a clear error).
    });
  }

  /**
   * Run queries in order on the connection; the last one's rows come back. `fresh`: no transaction is
   * open, so a connection lost since the last call may be replaced first.
   */
  query(queries: PgQuery[], fresh = false): PgReply {
    return this.call({ op: 'query', queries, fresh }) as PgReply;
  }

  connect(): void {
    this.call({ op: 'connect' });
  }

  /** LISTEN on a second connection; false when its probe never arrived (notifications do not reach us: poll). */
  listen(): boolean {
    return (this.call({ op: 'listen' }) as { listening?: boolean }).listening === true;
  }

  close(): void {
    if (this.closed) return;
    try {
      this.call({ op: 'end' }, 5000);
    } catch {
      // closing anyway
    }
    this.closed = true;
    void this.worker.terminate();
    this.port.close();
  }

  private callLimitMs: number | null = null;

  /**
   * From now on no call may block longer than `ms` (a process that is stopping: a healthy server answers
   * well within it; one that does not is taken as gone, and what was not written is left to recovery).
   */
  limitCalls(ms: number): void {
    this.callLimitMs = Math.min(ms, this.callLimitMs ?? ms);
  }

  private call(msg: ThreadRequest, timeoutMs = this.opts.timeoutMs): unknown {
    if (this.callLimitMs !== null) timeoutMs = Math.min(timeoutMs, this.callLimitMs);
    if (this.closed) throw new AppError('unavailable', this.closedBecause ?? `the PostgreSQL store ${this.opts.label} is closed`, { closed: true });
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(msg);
    const got = awaitReply(this.port, this.flag, timeoutMs);
    if (!got) {
      // The connection is in an unknown state now (a late answer would be taken for the next call's).
      this.closed = true;
      void this.worker.terminate();
      // Every later call says why the store is gone, not just that it is closed.
      this.closedBecause = `the PostgreSQL store ${this.opts.label} did not answer within ${Math.round(timeoutMs / 1000)} s`;
      throw new AppError('unavailable', this.closedBecause, { closed: true });
    }
    const reply = got.message as ThreadReply;
    if (!reply.ok) {
      const e = reply.error;
      // Cannot (re)connect: the store is unavailable. A connection lost under a statement stays a PgError,
      // which PgDb answers by running the statement or its transaction again on a new connection.
      if (msg.op === 'connect' || msg.op === 'listen' || /ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH/.test(e.message)) {
        throw new AppError('unavailable', `cannot reach the PostgreSQL store ${this.opts.label}: ${e.message}`);
      }
      throw new PgError(e.message, e.code, e.detail);
    }
    return reply;
  }
}

/**
 * Block until the thread's answer to the call just posted is on `port`, or `timeoutMs` passed (undefined).
 *
 * The thread answers with postMessage, then sets the flag, then notifies. Being woken is no proof of an
 * answer: when the previous call saw the flag already set ('not-equal') and returned, that call's notify
 * can still be on its way, and it wakes this call's wait before its answer exists. Under load (a thread
 * descheduled between the store and the notify) that happened, and the bridge took it for a timeout and
 * closed the store for good. So only a message on the port ends the wait.
 */
export function awaitReply(port: MessagePort, flag: Int32Array, timeoutMs: number): { message: unknown } | undefined {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const got = receiveMessageOnPort(port);
    if (got) return got;
    const left = deadline - performance.now();
    if (left <= 0) return undefined;
    // A set flag without a message would make wait return at once, forever: clear it, then look again (an
    // answer posted before the clear is seen below; one posted after it sets the flag and notifies).
    Atomics.store(flag, 0, 0);
    const late = receiveMessageOnPort(port);
    if (late) return late;
    Atomics.wait(flag, 0, 0, left);
  }
}

