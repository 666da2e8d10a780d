import type { EventRow } from './types.js';
import type { CallCommand } from './commands.js';
import { createHttpClient } from './http-client.js';
import { createIpcClient } from './ipc-client.js';

/** A failed command, as every face reports it. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** True when the command is not in the engine's table (yet): the UI shows "not available". */
export function isUnknownCommand(err: unknown): boolean {
  return err instanceof ApiError && err.code === 'not_found' && /unknown command/i.test(err.message);
}

/** `signed_out`: the server no longer knows this page's session (it restarted); only its new URL helps. */
export type LiveState = 'connecting' | 'live' | 'offline' | 'signed_out';

/** What the console says once its session is gone. */
export const SIGNED_OUT_MESSAGE = 'The server restarted — open the new URL printed by `lightworker serve` (it ends in ?token=…).';

export interface ApiClient {
  kind: 'ipc' | 'http';
  /** One command of the table: its name, input and result typed by the library's command methods. */
  call: CallCommand;
  /** Every engine event from now on; returns an unsubscribe function. */
  subscribe(onEvent: (e: EventRow) => void, onState: (s: LiveState) => void): () => void;
  /** Requests from outside the page (a notification click, the tray) to show a route. */
  onNavigate(fn: (hash: string) => void): () => void;
}

let client: ApiClient | null = null;

/** IPC inside the desktop app (preload set `window.lightworker`), HTTP + SSE in a browser. */
export function api(): ApiClient {
  client ??= window.lightworker ? createIpcClient(window.lightworker) : createHttpClient();
  return client;
}
