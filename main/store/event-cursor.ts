import type { Db } from './db.js';
import { listEvents, listEventsBySeq, type EventRow } from './events.js';

/** A missing sequence number is given up (its transaction rolled back) after this long. */
const GAP_GIVE_UP_MS = 3000;
const PAGE = 1000;

/**
 * Where a process stands in the event log, for publishing other processes' events exactly once.
 * SQLite hands out sequence numbers under its write lock, so they commit in order. PostgreSQL hands
 * them out before commit: event 11 can become visible before event 10. So the cursor keeps the highest
 * number read and the numbers below it not seen yet (gaps); each read asks for those again, until they
 * appear or are old enough to be a rolled-back transaction's.
 */
export class EventCursor {
  private high: number;
  private readonly gaps = new Map<number, number>();

  constructor(start: number) {
    this.high = start;
  }

  /** Are there numbers below the newest read still to appear? */
  get waiting(): boolean {
    return this.gaps.size > 0;
  }

  /** Events not published yet, in sequence order. */
  read(db: Db, now = Date.now()): EventRow[] {
    const out: EventRow[] = [];
    if (this.gaps.size) {
      for (const e of listEventsBySeq(db, [...this.gaps.keys()])) {
        this.gaps.delete(e.seq);
        out.push(e);
      }
      for (const [seq, at] of this.gaps) if (now - at > GAP_GIVE_UP_MS) this.gaps.delete(seq);
    }
    for (;;) {
      const { events } = listEvents(db, { after: this.high, limit: PAGE });
      for (const e of events) {
        for (let s = this.high + 1; s < e.seq && this.gaps.size < PAGE; s++) this.gaps.set(s, now);
        this.high = e.seq;
        out.push(e);
      }
      if (events.length < PAGE) break;
    }
    return out.length > 1 && out[0].seq > out[out.length - 1].seq ? out.sort((a, b) => a.seq - b.seq) : out;
  }
}
