/** What preload/index.ts exposes as `window.lightworker` in the desktop app. */
export interface Reply {
  ok: boolean;
  data?: unknown;
  error?: { code: string; message: string };
}

export type BridgeEvent = 'event' | 'navigate' | 'scheduler';

export interface Bridge {
  /** One method per command in the table; each resolves to `{ok, data}` or `{ok:false, error}`. */
  commands: Record<string, (input?: unknown) => Promise<Reply>>;
  /** Subscribe to pushed messages; returns an unsubscribe function. */
  on(event: BridgeEvent, fn: (payload: unknown) => void): () => void;
}
