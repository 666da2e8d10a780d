import type { EventRow } from '../store/events.js';

export interface NotificationSpec {
  title: string;
  body: string;
  /** The task a click opens; null opens the list (or the inbox for approvals). */
  taskId: string | null;
  /** Where a click goes in the console (hash route). */
  route: string;
  /** Quiet notifications make no sound. */
  silent: boolean;
}

export interface NotifierDeps {
  show(n: NotificationSpec): void;
  /** config.notifications, read at the moment of notifying so Settings changes apply at once. */
  settings(): { approvals: boolean; failures: boolean; completions: boolean; requests?: boolean };
  taskName(id: string): string | null;
  /** After the first approval notification, further ones within this window become one summary. */
  approvalWindowMs?: number;
  /** Failures and completions are gathered this long, then shown as one quiet notification. */
  quietWindowMs?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
}

const FAILED = new Set(['failed', 'timed_out', 'orphaned', 'blocked']);

/**
 * Turns task.status events into OS notifications: an approval notifies at once (a person is waiting),
 * a burst of them collapses into one follow-up; failures and completions are batched and silent. A
 * worker's question or permission request (request.created) notifies at once, each one: it names
 * what is asked, which a summary could not.
 */
export function createNotifier(deps: NotifierDeps): { onEvent(e: EventRow): void; dispose(): void } {
  const setTimer = deps.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  const clearTimer = deps.clearTimer ?? ((t) => clearTimeout(t as NodeJS.Timeout));
  const approvalWindow = deps.approvalWindowMs ?? 5000;
  const quietWindow = deps.quietWindowMs ?? 15_000;
  let approvalTimer: unknown = null;
  let heldApprovals: string[] = [];
  let quietTimer: unknown = null;
  let failed: string[] = [];
  let completed: string[] = [];
  const name = (id: string) => deps.taskName(id) ?? id;

  function closeApprovalWindow(): void {
    approvalTimer = null;
    if (!heldApprovals.length) return;
    const ids = heldApprovals;
    heldApprovals = [];
    if (ids.length === 1) deps.show({ title: 'Approval needed', body: name(ids[0]), taskId: ids[0], route: `#/tasks/${ids[0]}`, silent: false });
    else deps.show({ title: `${ids.length} more tasks need approval`, body: ids.slice(0, 3).map(name).join(', ') + (ids.length > 3 ? ', …' : ''), taskId: null, route: '#/inbox', silent: false });
    approvalTimer = setTimer(closeApprovalWindow, approvalWindow);
  }

  function flushQuiet(): void {
    quietTimer = null;
    const f = failed;
    const c = completed;
    failed = [];
    completed = [];
    if (f.length + c.length === 0) return;
    if (f.length + c.length === 1) {
      const id = f[0] ?? c[0];
      deps.show({ title: f.length ? 'Task failed' : 'Task completed', body: name(id), taskId: id, route: `#/tasks/${id}`, silent: true });
      return;
    }
    const parts = [f.length ? `${f.length} failed` : '', c.length ? `${c.length} completed` : ''].filter(Boolean);
    deps.show({ title: `Tasks: ${parts.join(', ')}`, body: [...f, ...c].slice(0, 3).map(name).join(', '), taskId: null, route: '#/tasks', silent: true });
  }

  /** A worker asks a person: at once, like an approval, opening the inbox where it is answered. */
  function notifyRequest(e: EventRow): void {
    const id = e.taskId!;
    const p = e.payload as { kind?: string; question?: string; tool?: string | null; command?: string | null };
    const asks = p.kind === 'permission' ? `${p.tool ?? 'a tool'}: ${p.command ?? p.question ?? ''}` : String(p.question ?? '');
    const title = p.kind === 'permission' ? 'Permission requested' : 'Question from a task';
    deps.show({ title, body: `${name(id)} — ${asks}`.slice(0, 240), taskId: id, route: `#/inbox`, silent: false });
  }

  return {
    onEvent(e) {
      if (e.type === 'request.created' && e.taskId) {
        if (deps.settings().requests !== false) notifyRequest(e);
        return;
      }
      if (e.type !== 'task.status' || !e.taskId) return;
      const to = String(e.payload.to);
      const s = deps.settings();
      if (to === 'awaiting_approval' && s.approvals) {
        if (approvalTimer === null) {
          deps.show({ title: 'Approval needed', body: name(e.taskId), taskId: e.taskId, route: `#/tasks/${e.taskId}`, silent: false });
          approvalTimer = setTimer(closeApprovalWindow, approvalWindow);
        } else heldApprovals.push(e.taskId);
        return;
      }
      const isFail = FAILED.has(to) && s.failures;
      const isDone = to === 'completed' && s.completions;
      if (!isFail && !isDone) return;
      (isFail ? failed : completed).push(e.taskId);
      quietTimer ??= setTimer(flushQuiet, quietWindow);
    },
    dispose() {
      if (approvalTimer !== null) clearTimer(approvalTimer);
      if (quietTimer !== null) clearTimer(quietTimer);
      approvalTimer = quietTimer = null;
    },
  };
}
