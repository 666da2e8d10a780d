import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { signalsArrived } from '../core/signal-hold.js';
import { isProcessGone, processIdentity } from '../platform/git/repo-lock.js';

/**
 * The journal of an accept in progress: one file per task under `<home>/accepts/`, written and synced to
 * disk before the accept touches the user's repository and removed after its last step. A journal whose
 * process is gone is an accept that was interrupted; `accept-recover.ts` finishes or undoes it.
 *
 * The folder exists only while it holds a journal (the last one out removes it; rmdir refuses a folder
 * that is not empty): every command checks for interrupted accepts first, and a path that does not
 * exist is a far cheaper answer than reading an empty folder — no journal can exist without it.
 *
 * Steps, in order (each is written to the journal when reached; recovery decides from the repository
 * itself, the step is the record of how far it got):
 *   journaled → ref (the branch points at the new commit) → checkout (index and files of the touched
 *   paths are at it) → marked (the task is `accepted`) → cleaned (its worktree removed) → journal removed.
 *   A checkout step that fails puts the ref and the paths back (`undoing`) before the journal goes.
 */

export type AcceptStep = 'journaled' | 'ref' | 'checkout' | 'marked' | 'cleaned' | 'undoing';

export interface AcceptJournal {
  version: 1;
  task: string;
  repo: string;
  /** The branch the commit goes onto. */
  branch: string;
  /** The branch is the one checked out in `repo`: its index and files follow the ref. */
  onCheckout: boolean;
  /** The branch's tip before (null: the branch did not exist and is created). */
  oldTip: string | null;
  /** The commit the new one is built on (the old tip, or HEAD for a new branch). */
  parent: string;
  /** The accept commit. */
  newCommit: string;
  /** Paths the task's diff touches (the only ones the checkout step writes). */
  files: string[];
  by: string;
  unverified: boolean;
  step: AcceptStep;
  /** Who is carrying it out: a live process here is never interfered with. */
  pid: number;
  start: string | null;
  host: string;
  at: number;
}

/** Journals this process is carrying out right now (an accept, or a recovery that adopted one). */
const active = new Set<string>();

/** Where the journals of the home at `home` (its root folder) live. */
export function journalDir(home: string): string {
  return join(home, 'accepts');
}

function journalPath(home: string, task: string): string {
  return join(journalDir(home), `${task}.json`);
}

/** Write the file and its directory entry to disk before returning: a power cut keeps it or the previous one. */
function writeDurably(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDir(join(path, '..'));
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Windows cannot open a directory; its rename is already durable enough
  }
}

/** Record an accept about to start (this process its owner), durably, before the repository is touched. */
export function openJournal(home: string, j: Omit<AcceptJournal, 'version' | 'step' | 'pid' | 'start' | 'host' | 'at'>): AcceptJournal {
  const full: AcceptJournal = { version: 1, ...j, step: 'journaled', ...owner() };
  active.add(j.task);
  for (let tries = 1; ; tries++) {
    mkdirSync(journalDir(home), { recursive: true, mode: 0o700 });
    try {
      writeDurably(journalPath(home, j.task), JSON.stringify(full));
      return full;
    } catch (err) {
      // Another process removed the folder, empty, between the mkdir and the write: make it again.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || tries >= 5) {
        active.delete(j.task);
        throw err;
      }
    }
  }
}

function owner(): Pick<AcceptJournal, 'pid' | 'start' | 'host' | 'at'> {
  return { ...processIdentity(), at: Date.now() };
}

/** Record that `step` is reached. */
export function advanceJournal(home: string, j: AcceptJournal, step: AcceptStep): void {
  j.step = step;
  writeDurably(journalPath(home, j.task), JSON.stringify(j));
}

/** Take over an interrupted accept's journal (the caller holds the repository lock). */
export function adoptJournal(home: string, j: AcceptJournal): void {
  Object.assign(j, owner());
  active.add(j.task);
  writeDurably(journalPath(home, j.task), JSON.stringify(j));
}

/** The accept is over (done or undone): forget it. */
export function closeJournal(home: string, task: string): void {
  rmSync(journalPath(home, task), { force: true });
  syncDir(journalDir(home));
  active.delete(task);
  removeIfEmpty(journalDir(home));
}

/** Remove the journal folder when it holds nothing (refused, harmlessly, when another journal is there). */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (another accept's journal), already gone, or in use
  }
}

/** Stop carrying a journal out without removing it (a step failed in a way only recovery can settle). */
export function leaveJournal(task: string): void {
  active.delete(task);
}

export function readJournal(home: string, task: string): AcceptJournal | null {
  try {
    const j = JSON.parse(readFileSync(journalPath(home, task), 'utf8')) as AcceptJournal;
    return j.version === 1 && j.task === task ? j : null;
  } catch {
    return null;
  }
}

/** Journals whose accept nobody is carrying out: their process ended (or is this one, no longer at it). */
export function interruptedJournals(home: string): AcceptJournal[] {
  // No folder, no journal (see the file comment): one stat that does not throw, instead of a directory read.
  if (!existsSync(journalDir(home))) return [];
  let names: string[];
  try {
    names = readdirSync(journalDir(home));
  } catch {
    return [];
  }
  // An empty folder (left by an older version): removed, so the next command finds none.
  if (!names.length) removeIfEmpty(journalDir(home));
  const found: AcceptJournal[] = [];
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    const j = readJournal(home, name.slice(0, -5));
    if (j && isInterrupted(j)) found.push(j);
  }
  return found;
}

export function isInterrupted(j: AcceptJournal): boolean {
  if (j.pid === process.pid) return !active.has(j.task);
  return isProcessGone(j);
}

/**
 * Test hook, for tests that kill an accept at a chosen step (never set in normal use):
 * `LIGHTWORKER_TEST_ACCEPT_PAUSE=<step>` makes an accept stop when it reaches that step, say so on stderr
 * (`lightworker test hook: accept paused at <step>`), and wait there until a signal arrives — the test
 * then kills the process with SIGKILL, or sends SIGINT/SIGTERM to see the accept finish before exiting.
 * Steps: journaled, ref, mid-checkout (some touched paths written, not all), checkout, marked, cleaned.
 */
export async function pauseForTest(step: AcceptStep | 'mid-checkout'): Promise<void> {
  if (process.env.LIGHTWORKER_TEST_ACCEPT_PAUSE !== step) return;
  const seen = signalsArrived();
  process.stderr.write(`lightworker test hook: accept paused at ${step}\n`);
  while (signalsArrived() === seen) await sleep(20);
}
