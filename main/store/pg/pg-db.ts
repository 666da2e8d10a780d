import type { Db, Statement, Transaction } from '../db.js';
import { PgBridge, PgError, type PgQuery } from './bridge.js';
import { toPostgres } from './translate.js';

/** SQLSTATEs after which a whole transaction is safely run again: serialization failure, deadlock, unique race. */
const RETRYABLE = new Set(['40001', '40P01', '23505']);

/**
 * The connection went away under a statement (the server terminated it, restarted, or the network
 * dropped): the server rolled back any open transaction, so the whole transaction can run again on a
 * new connection.
 */
function connectionLost(err: unknown): boolean {
  if (!(err instanceof PgError)) return false;
  const code = err.code ?? '';
  return code === 'connection_lost' || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || /Connection terminated|not queryable|ECONNRESET|EPIPE/i.test(err.message);
}
const MAX_TRIES = 6;
/** Without LISTEN: the change counter is read this often after a change, backing off to POLL_MAX_MS. */
const POLL_MIN_MS = 50;
const POLL_MAX_MS = 2000;

/**
 * The PostgreSQL store behind the same synchronous interface as better-sqlite3 (store/db.ts `Db`), so the
 * engine, state machine and commands run unchanged. SQL is translated once per statement text
 * (pg/translate.ts) and sent as a named prepared statement. Transactions: the outermost one is
 * BEGIN … COMMIT (BEGIN travels with the first statement, so an empty transaction costs nothing);
 * nested ones are savepoints. A transaction that hits a deadlock, a serialization failure or a unique
 * race (two runners inserting the same ledger key) runs again from the start, reading fresh rows.
 * `pragma('data_version')` counts other processes' commits as NOTIFY tells of them, or, without LISTEN, as the change counter shows them (pg/schema.ts).
 */
export class PgDb implements Db {
  readonly dialect = 'postgres' as const;
  readonly name: string;
  private readonly translated = new Map<string, string>();
  private depth = 0;
  private beginPending = false;
  private version = 0;
  private isOpen = true;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly bridge: PgBridge,
    label: string,
    /** The home this process runs from (store/db.ts `Db.homeRoot`). */
    readonly homeRoot?: string,
    private readonly opts: { listen: boolean } = { listen: true },
  ) {
    this.name = label;
    bridge.onNotify = () => this.changed();
    bridge.onListenLost = () => {
      this.listening = false;
    };
  }

  get open(): boolean {
    return this.isOpen;
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  prepare(sql: string): Statement {
    let text = this.translated.get(sql);
    if (text === undefined) {
      text = toPostgres(sql);
      this.translated.set(sql, text);
    }
    return new PgStatement(this, text);
  }

  /** Run one statement (BEGIN first when a transaction has not sent it yet). */
  run(query: PgQuery): { rows: Record<string, unknown>[]; count: number } {
    const fresh = this.beginPending || this.depth === 0;
    const queries = this.beginPending ? [{ text: 'BEGIN' }, query] : [query];
    let out;
    try {
      try {
        out = this.bridge.query(queries, fresh);
      } catch (err) {
        // Outside a transaction a statement that lost its connection is sent once more, on a new one.
        if (this.depth !== 0 || !connectionLost(err)) throw err;
        out = this.bridge.query(queries, true);
      }
    } catch (err) {
      // The statement (placeholders only, never values) says which query a failure came from.
      if (err instanceof PgError) err.message = `${err.message} (in: ${query.text.replace(/\s+/g, ' ').slice(0, 300)})`;
      throw err;
    }
    this.beginPending = false;
    for (const row of out.rows) for (const k in row) if (row[k] instanceof Uint8Array && !Buffer.isBuffer(row[k])) row[k] = toBuffer(row[k]);
    return out;
  }

  transaction<F extends (...params: never[]) => unknown>(fn: F): Transaction<F> {
    const run = (...args: Parameters<F>): ReturnType<F> => this.inTx(() => fn(...args) as ReturnType<F>);
    return Object.assign(run, { default: run, deferred: run, immediate: run, exclusive: run }) as unknown as Transaction<F>;
  }

  private inTx<T>(fn: () => T): T {
    if (this.depth > 0) return this.savepoint(fn);
    for (let attempt = 1; ; attempt++) {
      this.depth = 1;
      this.beginPending = true;
      try {
        const out = fn();
        if (!this.beginPending) this.bridge.query([{ text: 'COMMIT' }]);
        return out;
      } catch (err) {
        if (!this.beginPending) {
          try {
            this.bridge.query([{ text: 'ROLLBACK' }]);
          } catch {
            // the connection is gone; the server rolled back
          }
        }
        const again = err instanceof PgError && ((err.code !== undefined && RETRYABLE.has(err.code)) || connectionLost(err));
        if (!again || attempt >= MAX_TRIES) throw err;
      } finally {
        this.depth = 0;
        this.beginPending = false;
      }
    }
  }

  private savepoint<T>(fn: () => T): T {
    const name = `sp${this.depth}`;
    this.run({ text: `SAVEPOINT ${name}` });
    this.depth++;
    try {
      const out = fn();
      this.bridge.query([{ text: `RELEASE SAVEPOINT ${name}` }]);
      return out;
    } catch (err) {
      this.bridge.query([{ text: `ROLLBACK TO SAVEPOINT ${name}` }]);
      throw err;
    } finally {
      this.depth--;
    }
  }

  exec(sql: string): this {
    this.run({ text: sql });
    return this;
  }

  /**
   * The few pragmas the engine reads, answered from PostgreSQL's side: `data_version` (a count of other
   * processes' commits seen through NOTIFY), `user_version` (the schema version) and `quick_check`.
   */
  pragma(source: string, options?: { simple?: boolean }): unknown {
    const name = source.trim().toLowerCase();
    let value: unknown;
    if (name === 'data_version') {
      // Polled often by a watching engine: the moment to LISTEN again after the connection dropped, or,
      // without LISTEN, to look at the change counter (backing off while nothing changes).
      if (this.wantListen && !this.listening && this.opts.listen) this.relisten();
      if (this.wantListen && !this.listening && this.depth === 0) this.pollChanges();
      value = this.version;
    }
    else if (name === 'user_version') value = (this.run({ text: 'SELECT version FROM schema_version' }).rows[0]?.version as number | undefined) ?? 0;
    else if (name === 'quick_check' || name === 'integrity_check') value = this.run({ text: "SELECT 'ok' AS r" }).rows[0].r;
    else throw new Error(`PRAGMA ${source} has no PostgreSQL counterpart`);
    return options?.simple ? value : [{ [name]: value }];
  }

  private listening = false;
  private wantListen = false;

  /**
   * Start receiving other processes' commits: a second connection LISTENs on the store's channel. Without
   * LISTEN — `[store] listen = false` (a transaction-mode pooler, which cannot carry it), or a LISTEN whose
   * own probe notification never came back — `data_version` polls the store's change counter instead.
   */
  listen(): void {
    this.wantListen = true;
    if (this.listening || !this.opts.listen || this.undelivered) return;
    this.listening = this.bridge.listen();
    // LISTEN took but its probe never came back (a pooler in between): poll for good, rather than block on
    // another probe every time data_version looks.
    if (!this.listening) this.undelivered = true;
  }

  private undelivered = false;

  private relistenAt = 0;

  private relisten(): void {
    const now = Date.now();
    if (now - this.relistenAt < 2000) return;
    this.relistenAt = now;
    try {
      this.listen();
    } catch {
      return; // still unreachable: the next poll tries again
    }
    if (this.listening) this.changed(); // commits made while nobody listened: look once
  }

  /** While polling: the change counter as last read, when to read it next, and the wait that grows while nothing changes. */
  private polled: number | null = null;
  private pollAt = 0;
  private pollEveryMs = POLL_MIN_MS;
  private recheck = false;

  /**
   * Read the change counter (a sequence every notifying trigger advances, pg/schema.ts) when due. A change
   * looks again soon; quiet polls back off to POLL_MAX_MS, so an idle runner costs one read per that time.
   * The counter moves when a writer's statement runs, before it commits: after a change, one more look at
   * the next poll catches rows that were not yet visible.
   */
  private pollChanges(): void {
    const now = Date.now();
    if (now < this.pollAt) return;
    let v: number;
    try {
      v = Number(this.run({ text: 'SELECT last_value AS v FROM lw_changes' }).rows[0]?.v ?? 0);
    } catch {
      this.pollAt = now + POLL_MAX_MS; // unreachable: the scheduler's beat reports it
      return;
    }
    const moved = this.polled !== null && v !== this.polled;
    this.polled = v;
    if (moved || this.recheck) this.changed();
    this.recheck = moved;
    this.pollEveryMs = moved ? POLL_MIN_MS : Math.min(POLL_MAX_MS, this.pollEveryMs * 2);
    this.pollAt = now + this.pollEveryMs;
  }

  /** How this process learns of other processes' commits now. */
  get watchMode(): 'listen' | 'poll' {
    return this.listening ? 'listen' : 'poll';
  }

  private changed(): void {
    this.version++;
    for (const l of this.listeners) l();
  }

  /** Call `fn` whenever another process commits (NOTIFY on the store's channel). Returns the unsubscribe. */
  onCommit(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** No later call blocks longer than `ms` (pg/bridge.ts limitCalls). */
  limitCalls(ms: number): void {
    this.bridge.limitCalls(ms);
  }

  close(): this {
    if (!this.isOpen) return this;
    this.isOpen = false;
    this.listeners.clear();
    this.bridge.close();
    return this;
  }
}

function toBuffer(v: Uint8Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function paramsOf(params: unknown[]): unknown[] {
  return params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p === undefined ? null : p));
}

class PgStatement implements Statement {
  constructor(
    private readonly db: PgDb,
    private readonly text: string,
  ) {}

  get(...params: unknown[]): unknown {
    return this.db.run({ text: this.text, values: paramsOf(params) }).rows[0];
  }

  all(...params: unknown[]): unknown[] {
    return this.db.run({ text: this.text, values: paramsOf(params) }).rows;
  }

  run(...params: unknown[]): { changes: number } {
    return { changes: this.db.run({ text: this.text, values: paramsOf(params) }).count };
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    return this.all(...params)[Symbol.iterator]();
  }
}
