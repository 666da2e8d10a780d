import type { EngineHandle } from '../store/engine-handle.js';
import { listEvents, type EventRow } from '../store/events.js';

export interface FollowOptions {
  /** Start after this event cursor (`seq`); 0 (default) replays the whole log first. */
  after?: number;
  /** Only this task's events. */
  taskId?: string;
  /** Only events of tasks in this root's tree. */
  rootId?: string;
  /** Only these event types (e.g. `task.updated`). */
  types?: string[];
  /** Ends the iteration (the loop simply finishes). */
  signal?: AbortSignal;
}

const PAGE = 500;

/**
 * Every event after `opts.after`, oldest first, then each new one as it is committed — by this process at
 * once, by other processes within the engine's poll interval (PRAGMA data_version). Ends when the signal
 * aborts, `isClosed()` turns true, or the consumer breaks out of its loop.
 */
export async function* followEvents(engine: EngineHandle, isClosed: () => boolean, opts: FollowOptions = {}): AsyncGenerator<EventRow, void, undefined> {
  let cursor = opts.after ?? 0;
  // `dirty` is set by every change, so one arriving between a read and the wait is never missed.
  let dirty = false;
  let wake: (() => void) | null = null;
  const onChange = () => {
    dirty = true;
    wake?.();
  };
  engine.watch();
  engine.events.on('change', onChange);
  opts.signal?.addEventListener('abort', onChange);
  try {
    for (;;) {
      if (opts.signal?.aborted || isClosed()) return;
      dirty = false;
      const page = listEvents(engine.db, { after: cursor, taskId: opts.taskId, rootId: opts.rootId, types: opts.types, limit: PAGE });
      cursor = page.cursor;
      for (const event of page.events) {
        yield event;
        if (opts.signal?.aborted || isClosed()) return;
      }
      if (page.events.length === PAGE || dirty) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = null;
    }
  } finally {
    engine.events.off('change', onChange);
    opts.signal?.removeEventListener('abort', onChange);
  }
}
