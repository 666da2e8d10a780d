import { prep, type Db } from './db.js';

/** The tombstone's body, signed: which tree went, and where each of its chains ended. */
export interface TombstoneBody {
  rootId: string;
  tasks: string[];
  /** Each deleted chain's last link: [chain, position, hash]. `audit verify` accepts anchors up to it. */
  chains: [string, number, string][];
  endedAt: number;
  olderThan: string;
}

/** The text a tombstone's signature covers: its body's fields in a fixed order. */
export function tombstoneText(b: TombstoneBody): string {
  return JSON.stringify(['lightworker tombstone 1', b.rootId, b.tasks, b.chains, b.endedAt, b.olderThan]);
}

/** A tree gc deleted, as its tombstone names it (`audit verify` lists them). */
export interface Tombstone {
  seq: number;
  ts: number;
  rootId: string;
  tasks: number;
  chains: number;
}

/** Where a deleted chain ended, by its tombstone: anchors may name positions up to this one. */
export interface ChainEnd {
  pos: number;
  hash: string;
  seq: number;
}

/** Checks a tombstone's signature (HMAC with the home's key); absent: signatures are not checked. */
export type SignatureCheck = (text: string, signature: string) => boolean;

/**
 * Every tombstone of the log (`tree.deleted` events of the system chain), read in the caller's snapshot.
 * Their events are links of the system chain, which the same verification walks, so an edited tombstone
 * breaks that chain; the signature (the home's key, kept outside the database) is what stops someone
 * with write access to the database alone from appending a tombstone of their own to cover a deletion.
 */
export function readTombstones(db: Db, check?: SignatureCheck): { list: Tombstone[]; ends: Map<string, ChainEnd>; broken?: { seq: number; reason: string } } {
  const ends = new Map<string, ChainEnd>();
  const list: Tombstone[] = [];
  const rows = prep(db, "SELECT seq, ts, payload FROM events WHERE chain = '' AND type = 'tree.deleted' ORDER BY seq").all() as { seq: number; ts: number; payload: string }[];
  for (const r of rows) {
    let body: TombstoneBody & { signature?: string };
    try {
      body = JSON.parse(r.payload) as TombstoneBody & { signature?: string };
    } catch {
      return { list, ends, broken: { seq: r.seq, reason: `tombstone at event ${r.seq} is not readable` } };
    }
    if (!Array.isArray(body.chains) || !Array.isArray(body.tasks)) return { list, ends, broken: { seq: r.seq, reason: `tombstone at event ${r.seq} names no chains` } };
    if (check && (typeof body.signature !== 'string' || !check(tombstoneText(body), body.signature))) {
      return { list, ends, broken: { seq: r.seq, reason: `tombstone at event ${r.seq} (tree ${body.rootId}) is not signed by this home's key: a deletion made to look like gc` } };
    }
    for (const [chain, pos, hash] of body.chains) ends.set(chain, { pos, hash, seq: r.seq });
    list.push({ seq: Number(r.seq), ts: Number(r.ts), rootId: body.rootId, tasks: body.tasks.length, chains: body.chains.length });
  }
  return { list, ends };
}

/**
 * Does a tombstone account for a chain an anchor recorded but which has no events any more: it names the
 * chain ending at or after the anchored position (with the same hash, when at it)?
 */
export function coveredByTombstone(ends: Map<string, ChainEnd>, chain: string, anchored: { pos: number; hash: string }): boolean {
  const end = ends.get(chain);
  if (!end) return false;
  return end.pos > anchored.pos || (end.pos === anchored.pos && end.hash === anchored.hash);
}
