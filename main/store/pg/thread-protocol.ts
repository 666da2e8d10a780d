import type { MessagePort } from 'node:worker_threads';
import type { ClientConfig } from 'pg';

/** The messages between store/pg/bridge.ts and its connection thread (store/pg/connection-thread.ts). */

export interface PgQuery {
  text: string;
  /** Absent: the simple protocol (several statements, no parameters). */
  values?: unknown[];
}

/** What the thread starts with. */
export interface ThreadData {
  /** Where the main thread resolved `pg` (the thread has no module resolution of its own when evaluated). */
  pgPath: string;
  /** Four bytes: the flag the blocked main thread waits on. */
  shared: SharedArrayBuffer;
  /** The port calls and answers travel on (notifications use the thread's own parentPort). */
  port: MessagePort;
  cfg: ClientConfig;
  /** Quoted schema identifier for search_path. */
  schemaIdent: string;
  /** Quoted LISTEN channel identifier. */
  channelIdent: string;
  /** The channel's name (unquoted, for the LISTEN probe's pg_notify). */
  channel: string;
  /** How long a LISTEN waits for its own probe notification before the store polls instead. */
  probeMs: number;
}

export type ThreadRequest = { op: 'connect' } | { op: 'listen' } | { op: 'end' } | { op: 'query'; queries: PgQuery[]; fresh: boolean };

export type ThreadReply =
  | { ok: true; rows?: Record<string, unknown>[]; count?: number | null; listening?: boolean }
  | { ok: false; error: { message: string; code?: string; detail?: string; constraint?: string } };

/** Posted on the thread's parentPort, asynchronously: another process committed, or the LISTEN connection dropped. */
export interface ThreadNotice {
  notify?: boolean;
  listenLost?: boolean;
}
