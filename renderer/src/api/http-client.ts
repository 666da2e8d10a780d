import { ApiError, type ApiClient, type LiveState } from './client.js';
import type { Reply } from './bridge.js';
import type { EventRow } from './types.js';

function token(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="lightworker-token"]')?.content ?? '';
}

/** The console in a browser: `POST /api/commands/<name>` and server-sent events from `/api/events`. */
export function createHttpClient(): ApiClient {
  return {
    kind: 'http',
    async call<T>(name: string, input: unknown = {}): Promise<T> {
      let res: Response;
      try {
        res = await fetch(`./api/commands/${encodeURIComponent(name)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-lightworker-token': token() },
          body: JSON.stringify(input ?? {}),
        });
      } catch (err) {
        throw new ApiError('unavailable', `the console server is not reachable: ${(err as Error).message}`);
      }
      let body: Reply;
      try {
        body = (await res.json()) as Reply;
      } catch {
        throw new ApiError('internal', `${name}: HTTP ${res.status} without a JSON body`);
      }
      if (!body.ok) throw new ApiError(body.error?.code ?? 'internal', body.error?.message ?? `${name} failed`);
      return body.data as T;
    },
    subscribe(onEvent: (e: EventRow) => void, onState: (s: LiveState) => void): () => void {
      onState('connecting');
      const source = new EventSource('./api/events');
      source.addEventListener('hello', () => onState('live'));
      source.addEventListener('event', (m) => onEvent(JSON.parse((m as MessageEvent<string>).data) as EventRow));
      source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'offline' : 'connecting');
      return () => source.close();
    },
    onNavigate() {
      return () => undefined;
    },
  };
}
