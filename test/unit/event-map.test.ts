import { describe, expect, it } from 'vitest';
import { openDb } from '../../main/store/db.js';
import { appendEvent, listEvents, type EventRow } from '../../main/store/events.js';

describe('the event map', () => {
  it('types what is appended and read back by the event type', () => {
    const db = openDb({ path: ':memory:' });
    try {
      db.transaction(() => {
        appendEvent(db, null, 'team.error', { message: 'a step failed' });
        // @ts-expect-error: a misspelt event type does not compile
        appendEvent(db, null, 'team.eror', { message: 'x' });
        // @ts-expect-error: nor does a payload missing a field of its type
        appendEvent(db, null, 'request.expired', { requestId: 'r', kind: 'question' });
        // @ts-expect-error: nor one with a field its type does not have
        appendEvent(db, null, 'team.error', { message: 'x', mesage: 'y' });
      })();
      const [first] = listEvents(db, {}).events;
      const read = (e: EventRow): string | undefined => (e.type === 'team.error' ? e.payload.message : undefined);
      expect(read(first)).toBe('a step failed');
    } finally {
      db.close();
    }
  });
});
