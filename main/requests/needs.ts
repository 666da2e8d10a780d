import type { StoreReader } from '../store/engine-handle.js';
import { pendingRequestOf, type TaskRequest } from '../store/requests.js';
import type { NeedsInput, TaskSummary } from '../tasks/summary.js';

/** A request in the few fields an agent or a wait needs. */
export function needsOf(r: TaskRequest): NeedsInput {
  const asks = r.kind === 'permission' ? `${r.tool ?? 'tool'}: ${r.command ?? r.question}` : r.question;
  return { request: r.id, kind: r.kind, asks, ...(r.options.length ? { options: r.options } : {}), expiresAt: r.expiresAt };
}

/** The summary of a waiting task with what it asks (unchanged when nothing is pending). */
export function withNeeds<T extends TaskSummary | object>(engine: StoreReader, s: T & { id: string }): T {
  const r = pendingRequestOf(engine.db, s.id);
  return r ? { ...s, needs: needsOf(r) } : s;
}
