import { ApiError, SIGNED_OUT_MESSAGE, type ApiClient, type LiveState } from './client.js';
import type { Reply } from './bridge.js';
import { typedCall } from './commands.js';
import type { EventRow } from './types.js';

/**
 * The console in a browser: `POST /api/commands/<name>` and server-sent events from `/api/events`.
 * The session is the HttpOnly cookie the server set when the printed URL was opened; the page never
 * sees a secret. A 401 means that session is gone (the server restarted): every subscriber is told
 * `signed_out` once, and stays so — a reload cannot help, only the new URL can.
 */
export function createHttpClient(): ApiClient {
  const watchers = new Set<(s: LiveState) => void>();
  let signedOut = false;
  const markSignedOut = () => {
    if (signedOut) return;
    signedOut = true;
    for (const fn of watchers) fn('signed_out');
  };
  /** Ask the server about this session: 401 → signed out; no answer → offline; any other answer → `answered`. */
  const probe = async (onState: (s: LiveState) => void, answered: LiveState) => {
    try {
      const res = await fetch('./api/session', { credentials: 'same-origin', cache: 'no-store' });
      if (res.status === 401) return markSignedOut();
    } catch {
      if (!signedOut) onState('offline');
      return;
    }
    if (!signedOut) onState(answered);
  };
  return {
    kind: 'http',
    call: typedCall(async (name, input) => {
      if (signedOut) throw new ApiError('forbidden', SIGNED_OUT_MESSAGE);
      let res: Response;
      try {
        res = await fetch(`./api/commands/${encodeURIComponent(name)}`, {
          method: 'POST',
          credentials: 'same-origin',
          headers: { 'content-type': 'application/json', 'x-lightworker-csrf': '1' },
          body: JSON.stringify(input ?? {}),
        });
      } catch (err) {
        throw new ApiError('unavailable', `the console server is not reachable: ${(err as Error).message}`);
      }
      if (res.status === 401) {
        markSignedOut();
        throw new ApiError('forbidden', SIGNED_OUT_MESSAGE);
      }
      let body: Reply;
      try {
        body = (await res.json()) as Reply;
      } catch {
        throw new ApiError('internal', `${name}: HTTP ${res.status} without a JSON body`);
      }
      if (!body.ok) throw new ApiError(body.error?.code ?? 'internal', body.error?.message ?? `${name} failed`);
      return body.data;
    }),
    subscribe(onEvent: (e: EventRow) => void, onState: (s: LiveState) => void): () => void {
      onState(signedOut ? 'signed_out' : 'connecting');
      const source = new EventSource('./api/events');
      const watch = (s: LiveState) => {
        source.close();
        onState(s);
      };
      watchers.add(watch);
      source.addEventListener('hello', () => onState('live'));
      source.addEventListener('event', (m) => onEvent(JSON.parse((m as MessageEvent<string>).data) as EventRow));
      // A refused reconnect (401 after a restart) closes the stream for good; a dropped one retries, and
      // the session probe tells a stopped server (offline) from one that is coming back (connecting).
      source.onerror = () => {
        if (signedOut) return;
        if (source.readyState === EventSource.CLOSED) void probe(onState, 'offline');
        else void probe(onState, 'connecting');
      };
      return () => {
        watchers.delete(watch);
        source.close();
      };
    },
    onNavigate() {
      return () => undefined;
    },
  };
}
