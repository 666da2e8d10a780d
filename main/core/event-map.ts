/**
 * Every event type the engine appends to its log, with its payload: appendEvent and EventRow are typed by
 * this map (store/events.ts), so a misspelt type or a payload of the wrong shape does not compile, and a
 * reader that narrows on `type` gets the payload's fields. A payload written as a large literal in one place
 * (a workspace's setup, a verification's result) is typed by the fields readers rely on plus `Open`.
 * Adding an event type: add it here first; readers of the log (faces, the console) ignore types they do
 * not know, so a new one needs no migration.
 */

/** More fields, recorded for people and audits, that no code reads back. */
type Open = { [field: string]: unknown };

/** A task status by name (tasks/types.ts owns the closed list; core/ cannot import it). */
type Status = string;

export interface EngineEventMap {
  'task.created': { name: string; kind: string; worker: string; mode: string; status: Status } & Open;
  'task.status': { from: Status | Status[]; to: Status; reason?: string } & Open;
  'task.cancel_requested': { by: string; reason?: string };
  'task.redirected': { by: string; objective: string; status: Status };
  'task.redirect_applied': { redirect: unknown };
  'task.resumed': Open;
  /** Orphaned by its runner's loss but not resumed automatically (why: a task that keeps losing its runner, …). */
  'task.auto_resume_skipped': { reason: string };
  'task.route': { attempt: number } & Open;
  'task.changes': { changedFiles: string[]; empty: boolean; violations: string[]; diff: string | null };
  'task.accepted': { commit: string | null; branch: string | null; copiedTo?: string; files: string[]; by: string };
  'task.accept_recovered': Open;
  /** A run stopped by its spend guard: which budget, its limit and what was spent. */
  'task.budget_reached': { attempt: number; field: string; limit: number; spent: unknown } & Open;
  /** A rate limit put the same attempt back in the queue; its worker (its gateway, when routed through one) waits until `until`. */
  'task.rate_limited': { attempt: number; worker: string; gateway: string | null; until: number; message: string } & Open;
  /** A rate-limited task moved, as the same attempt, to its model's other route (`to`: its gateway, `model`: the provider's name there). */
  'task.rerouted': { attempt: number; from: string; to: string; model: string; route: 'primary' | 'fallback'; until: number; message: string };
  'plan.expanded': { summary: string; tasks: { id: string; ref: string }[] };
  'team.round': { strategy: string } & Open;
  'team.ended': { strategy: string; outcome: string } & Open;
  'team.error': { message: string };
  'request.created': { requestId: string; kind: string } & Open;
  'request.answered': { requestId: string; kind: string; decision: string | null; by: string; remember: boolean; answer?: string };
  'request.denied': { requestId: string; kind: string; by: 'policy'; reason: string } & Open;
  'request.expired': { requestId: string; kind: string; waitedS: number };
  'request.cancelled': { requestId: string; reason: string };
  'worker.prompt': Open;
  'worker.started': Open;
  'worker.message': Open;
  'worker.tool': Open;
  'worker.usage': Open;
  'worker.completed': Open;
  'worker.failed': Open;
  'worker.warning': Open;
  'worker.plan': { entries: unknown[] } & Open;
  'worker.output_truncated': Open;
  'changes.inspected': { changedFiles?: string[]; violations: string[]; empty: boolean } & Open;
  'verify.started': { attempt: number; run: number; commands: number; commit: string | null };
  'verify.command': Open;
  'verify.completed': Open;
  'worktree.allocated': Open;
  'worktree.setup': Open;
  'worktree.kept': Open;
  'worktree.not_kept': { reason: string };
  'worktree.branch_kept': Open;
  'worktree.removed': { path: string; reason: string } & Open;
  /** A task tree deleted by gc: its signed tombstone, on the system chain (store/gc.ts, store/tombstones.ts). */
  'tree.deleted': { rootId: string; tasks: string[]; chains: [string, number, string][]; endedAt: number; olderThan: string; signature: string };
  /** A retention pass of the leader that deleted trees (scheduler/retention-sweep.ts). */
  'retention.swept': { trees: number; tasks: number; events: number; bytes: number; kept: number; olderThan: string; durationMs: number };
  /** Task trees brought in from another home's export (store/transfer.ts). */
  'tree.imported': { rootId: string; tasks: number; events: number; from: string | null };
  'branch.removed': { branch: string; tip: string | null; reason: string };
  'copy.created': Open;
  'custody.restored': Open;
  'custody.failed': { repo: string; error: string };
  'integrate.merged': { merged: unknown };
  'integrate.conflicts': { conflicts: unknown };
  'snapshot.acquired': { id: string; path: string; stateCommit: string; reuse: unknown; timings: unknown };
  'snapshot.released': Open;
  'scheduler.leader': { holder: string; pid: number; previous: { holder: string; pid: number } | null };
  'fleet.runner_started': { runner: string; host: string; pid: number; repos: string[]; slots: number };
  'fleet.runner_lost': { runner: string; host: string; pid: number; why: string };
  'fleet.placed': { runner: string; host: string; workspace: string; submittedWorkspace: string; repo: string | null; originHost: string | null; claimMs: number };
  'store.full': { path: string; home: string; message: string; since: number; until: number; durationMs: number; freeBytesNow: number | null; pid: number };
  'config.invalid': { path: string; error: string; pid: number; kept: string };
  'review.comment': { file: string; line: number; endLine: number; text: string; by: string } & Open;
  'review.sent': { comments: number[]; attempt: number; by: string; count: number };
  'pr.opened': { number: number; url: string } & Open;
  'pr.state': { number: number } & Open;
  'pr.pushed': { number: number } & Open;
  'pr.fix_requested': { number: number; round: number } & Open;
  'pr.fix_failed': { number: number } & Open;
  'pr.fix_limit': { number: number } & Open;
  'pr.poll_failed': { number: number } & Open;
  'pr.merged': { number: number } & Open;
  'pr.closed': { number: number } & Open;
}

export type EngineEventType = keyof EngineEventMap;

/**
 * One event of the log as read back: narrowed on `type`, `payload` has the map's fields for it, each
 * possibly absent (an older LightWorker may have written the event with fewer); any field can still be read
 * (as unknown) without narrowing, as a generic reader (an event list, an audit) does.
 */
export type EngineEvent<K extends EngineEventType = EngineEventType> = {
  [T in K]: { seq: number; taskId: string | null; type: T; ts: number; payload: Partial<EngineEventMap[T]> & Open };
}[K];
