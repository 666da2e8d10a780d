import { existsSync } from 'node:fs';
import { withSignalsHeld } from '../core/signal-hold.js';
import { appendEvent } from '../store/events.js';
import { getTask } from '../store/tasks.js';
import { currentBranch, isAncestor, markAccepted, splitTouched, syncTouched } from './accept-apply.js';
import { adoptJournal, closeJournal, interruptedJournals, isInterrupted, readJournal, type AcceptJournal } from './accept-journal.js';
import { branchTip } from '../platform/git/branches.js';
import { withRepoLock } from '../platform/git/repo-lock.js';
import { getAllocation } from '../store/worktrees.js';
import { removeWorktree } from './worktree.js';

/**
 * Settle accepts that were interrupted (their process killed, or a signal, a power cut): run before every
 * command, so the first one after the crash puts things right. Under the repository's lock, from what the
 * repository shows now:
 *
 * - the branch is still at its old tip: nothing was applied — undone (paths a failed checkout step had
 *   written are put back); the task stays `completed` and can be accepted again;
 * - the branch is at the accept commit: finished — the touched paths of the checkout brought to it (only
 *   what is still as the accept left it; a user's edit since is left alone and named), the task
 *   marked `accepted`, its worktree removed (a file the user edited since keeps the edit, its index entry
 *   follows the branch);
 * - the branch moved on from the accept commit: the accept happened; marked `accepted`, nothing rewritten;
 * - the branch is elsewhere (reset, deleted): left as the user made it; the task stays `completed`.
 *
 * Each settlement is recorded on the task as `task.accept_recovered`. A recovery that cannot run now
 * (the lock busy, git failing) is tried again by a later command.
 */

/** The open home, as the steps below need it (what removing a worktree takes). */
type Engine = Parameters<typeof removeWorktree>[0];

export type RecoveryOutcome = 'finished' | 'undone' | 'abandoned';

export interface Recovery {
  task: string;
  outcome: RecoveryOutcome;
  /** Touched paths someone changed after the interruption: left as they are. */
  leftAlone: string[];
}

/** Not before this time again, per task (a recovery that failed: the lock was busy, git failed). */
const retryAfter = new Map<string, number>();

/** Settle every interrupted accept of this home (or of one repository); returns what was settled. */
export async function recoverInterruptedAccepts(engine: Engine, only?: { repo: string }): Promise<Recovery[]> {
  const found = interruptedJournals(engine.home.root).filter((j) => !only || j.repo === only.repo);
  const done: Recovery[] = [];
  for (const j of found) {
    if ((retryAfter.get(j.task) ?? 0) > Date.now()) continue;
    try {
      const r = await withSignalsHeld(() => recoverOne(engine, j));
      if (r) done.push(r);
      retryAfter.delete(j.task);
    } catch {
      // The journal stays: a later command tries again.
      retryAfter.set(j.task, Date.now() + 5_000);
    }
  }
  return done;
}

async function recoverOne(engine: Engine, found: AcceptJournal): Promise<Recovery | null> {
  if (!existsSync(found.repo)) {
    record(engine, found, 'abandoned', [], `its repository ${found.repo} is gone`);
    closeJournal(engine.home.root, found.task);
    return { task: found.task, outcome: 'abandoned', leftAlone: [] };
  }
  const settled = await withRepoLock(
    found.repo,
    `recover the interrupted accept of ${found.task}`,
    async () => {
      // Re-read under the lock: another process may have settled or adopted it meanwhile.
      const j = readJournal(engine.home.root, found.task);
      if (!j || !isInterrupted(j)) return null;
      adoptJournal(engine.home.root, j);
      return { j, ...(await settle(engine, j)) };
    },
    { timeoutMs: 5_000 },
  );
  if (!settled) return null;
  const { j, outcome, leftAlone } = settled;
  if (outcome === 'finished') {
    const alloc = getAllocation(engine.db, j.task);
    if (alloc && alloc.state !== 'released') await removeWorktree(engine, alloc, { reason: 'accepted', deleteBranch: false, snapshot: false });
  }
  closeJournal(engine.home.root, j.task);
  return { task: j.task, outcome, leftAlone };
}

async function settle(engine: Engine, j: AcceptJournal): Promise<{ outcome: RecoveryOutcome; leftAlone: string[] }> {
  const task = getTask(engine.db, j.task);
  if (task?.status === 'accepted') {
    record(engine, j, 'finished', [], 'it was interrupted after the task was marked accepted; its worktree is removed now');
    return { outcome: 'finished', leftAlone: [] };
  }
  const tip = await branchTip(j.repo, j.branch);
  const followsRef = j.onCheckout && (await currentBranch(j.repo)) === j.branch;
  if (tip === j.oldTip) {
    // The ref never moved, or a failed checkout step had put it back: put back any path it had written.
    let leftAlone: string[] = [];
    if (followsRef && j.step !== 'journaled') {
      leftAlone = await syncTouched(j.repo, j.parent, await splitTouched(j.repo, j.parent, j.newCommit, j.files));
    }
    record(engine, j, 'undone', leftAlone, 'nothing of it was applied; the task can be accepted again');
    return { outcome: 'undone', leftAlone };
  }
  if (tip === j.newCommit) {
    let leftAlone: string[] = [];
    if (followsRef) {
      leftAlone = await syncTouched(j.repo, j.newCommit, await splitTouched(j.repo, j.parent, j.newCommit, j.files));
    }
    markAccepted(engine, j, ' (finished after an interruption)');
    record(engine, j, 'finished', leftAlone, `the branch had moved to ${j.newCommit.slice(0, 12)}; its checkout was brought there`);
    return { outcome: 'finished', leftAlone };
  }
  if (tip && (await isAncestor(j.repo, j.newCommit, tip))) {
    markAccepted(engine, j, ` (finished after an interruption; ${j.branch} has moved on since)`);
    record(engine, j, 'finished', [], `${j.branch} has moved on to ${tip.slice(0, 12)} since; nothing was rewritten`);
    return { outcome: 'finished', leftAlone: [] };
  }
  record(engine, j, 'abandoned', [], `${j.branch} is ${tip ? `at ${tip.slice(0, 12)}` : 'deleted'} (not the accept's commit or its old tip): left as it is`);
  return { outcome: 'abandoned', leftAlone: [] };
}

function record(engine: Engine, j: AcceptJournal, outcome: RecoveryOutcome, leftAlone: string[], note: string): void {
  if (!getTask(engine.db, j.task)) return;
  engine.write(() =>
    appendEvent(engine.db, j.task, 'task.accept_recovered', {
      outcome,
      step: j.step,
      branch: j.branch,
      commit: j.newCommit,
      note,
      ...(leftAlone.length ? { leftAlone: leftAlone.slice(0, 200) } : {}),
    }),
  );
}
