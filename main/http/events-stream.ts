import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Engine } from '../engine.js';
import { latestSeq, listEvents, type EventRow } from '../store/events.js';
import { SECURITY_HEADERS } from './security.js';

const HEARTBEAT_MS = 15_000;

/** Where a client resumes: Last-Event-ID wins, then `?cursor=`, else from now on. */
export function resumeCursor(req: IncomingMessage, url: URL, engine: Engine): number {
  const raw = req.headers['last-event-id'] ?? url.searchParams.get('cursor');
  const n = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw !== null && raw !== undefined && raw !== '' && Number.isInteger(n) && n >= 0 ? n : latestSeq(engine.db);
}

/**
 * Server-sent events: first a `hello` with the starting cursor, then every event after it (backlog
 * from the table, then live from `engine.events`), each with `id: <seq>` so the browser's
 * EventSource resumes by itself after a reconnect. Duplicates are dropped by seq.
 */
export function streamEvents(req: IncomingMessage, res: ServerResponse, engine: Engine, cursor: number): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let last = cursor;
  const send = (e: EventRow) => {
    if (e.seq <= last) return;
    last = e.seq;
    res.write(`id: ${e.seq}\nevent: event\ndata: ${JSON.stringify(e)}\n\n`);
  };
  // Listener first, then backlog, both synchronous: nothing slips between them; `send` drops repeats.
  const onEvent = (e: EventRow) => send(e);
  engine.events.on('event', onEvent);
  res.write(`retry: 1000\nevent: hello\ndata: ${JSON.stringify({ cursor })}\n\n`);
  for (;;) {
    const page = listEvents(engine.db, { after: last, limit: 1000 });
    for (const e of page.events) send(e);
    if (page.events.length < 1000) break;
  }
  const beat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  beat.unref();
  const stop = () => {
    clearInterval(beat);
    engine.events.off('event', onEvent);
  };
  req.on('close', stop);
  res.on('error', stop);
}
