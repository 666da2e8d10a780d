import { ApiError, type ApiClient, type LiveState } from './client.js';
import type { Bridge } from './bridge.js';
import { typedCall } from './commands.js';
import type { EventRow } from './types.js';

/** The console inside the desktop app: one preload method per command, events pushed over IPC. */
export function createIpcClient(bridge: Bridge): ApiClient {
  return {
    kind: 'ipc',
    call: typedCall(async (name, input) => {
      const method = bridge.commands[name];
      if (!method) throw new ApiError('not_found', `unknown command "${name}"`);
      const reply = await method(input);
      if (!reply.ok) throw new ApiError(reply.error?.code ?? 'internal', reply.error?.message ?? `${name} failed`);
      return reply.data;
    }),
    subscribe(onEvent: (e: EventRow) => void, onState: (s: LiveState) => void): () => void {
      const off = bridge.on('event', (e) => onEvent(e as EventRow));
      onState('live');
      return off;
    },
    onNavigate(fn: (hash: string) => void): () => void {
      return bridge.on('navigate', (h) => fn(String(h)));
    },
  };
}
