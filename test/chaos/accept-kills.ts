// Scenario: accepts killed at an aimed step. One home and repository; each round makes a completed,
// verified execute task (modify two files, add one, delete one), starts the real `lightworker accept`
// paused at a step chosen by the seed (LIGHTWORKER_TEST_ACCEPT_PAUSE, the accept's test hook), kills it —
// SIGKILL to the process, or SIGINT to its whole process group as Ctrl-C does — runs the next command
// (`tasks --json`), and looks at the user's repository. A half-applied accept is any round where the
// branch, the index, the working tree and the task's status do not all say the same thing: fully accepted
// (task `accepted`, the branch one commit on with exactly the task's content, nothing staged or modified)
// or untouched (task `completed`, the branch where it was, the files as before, and a new accept works).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sharedSnapshot } from '../../main/isolation/attribution.js';
import { repoRoot } from '../../main/platform/git/git-exec.js';
import { requireTask } from '../../main/store/tasks.js';
import { BIN, runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { git, newExecuteTask, simulateRun, writeIn } from '../integration/isolation.helpers.js';
import { createRng } from './rng.js';

export interface AcceptKillFigures {
  kills: number;
  sigkills: number;
  sigints: number;
  /** Rounds settled as the whole accept. */
  finished: number;
  /** Rounds settled as no accept at all (then accepted again). */
  undone: number;
  /** Rounds where branch, index, working tree and task status disagree: must be 0. */
  halfApplied: number;
  /** Undone rounds whose second accept failed: must be 0. */
  reacceptFailures: number;
  notes: string[];
}

const STEPS = ['journaled', 'ref', 'mid-checkout', 'checkout', 'marked', 'cleaned'];

export async function runAcceptKills(o: { kills: number; seed: number; log?: (line: string) => void }): Promise<AcceptKillFigures> {
  const rng = createRng(o.seed);
  const f: AcceptKillFigures = { kills: 0, sigkills: 0, sigints: 0, finished: 0, undone: 0, halfApplied: 0, reacceptFailures: 0, notes: [] };
  const h = makeHome();
  try {
    writeIn(h.repo, { 'shared.txt': 'round 0\n' });
    git(h.repo, 'add', '-A');
    git(h.repo, 'commit', '-qm', 'shared');
    for (let i = 0; i < o.kills; i++) {
      const step = rng.pick(STEPS);
      const signal: NodeJS.Signals = rng.chance(0.5) ? 'SIGKILL' : 'SIGINT';
      const round = await oneRound(h, i, step, signal);
      f.kills++;
      if (signal === 'SIGKILL') f.sigkills++;
      else f.sigints++;
      if (round.verdict === 'accepted') f.finished++;
      else if (round.verdict === 'untouched') f.undone++;
      else {
        f.halfApplied++;
        f.notes.push(`round ${i} (${signal} at ${step}): ${round.verdict}`);
      }
      if (round.reacceptFailed) {
        f.reacceptFailures++;
        f.notes.push(`round ${i} (${signal} at ${step}): accepting again failed: ${round.reacceptFailed}`);
      }
      if ((i + 1) % 10 === 0) o.log?.(`chaos: accept kills ${i + 1}/${o.kills}`);
    }
  } finally {
    h.cleanup();
  }
  return f;
}

async function oneRound(h: TestHome, i: number, step: string, signal: NodeJS.Signals): Promise<{ verdict: string; reacceptFailed?: string }> {
  // Each round changes the shared file (every accept lands on it) and files of its own.
  writeIn(h.repo, { [`r${i}-gone.txt`]: 'to be deleted\n', [`r${i}-mod.txt`]: 'before\n' });
  git(h.repo, 'add', '-A');
  git(h.repo, 'commit', '-qm', `round ${i} files`);
  // The task's boundary check may start from a snapshot of the checkout taken up to half a second earlier
  // (shared by tasks starting together): take one after this commit, so the commit is not the task's.
  await sharedSnapshot(h.engine, await repoRoot(h.repo), performance.now());
  const base = git(h.repo, 'rev-parse', 'HEAD');
  const task = await newExecuteTask(h);
  const after: Record<string, string | null> = { 'shared.txt': `round ${i + 1}\n`, [`r${i}-mod.txt`]: 'after\n', [`r${i}-new.txt`]: 'new\n', [`r${i}-gone.txt`]: null };
  const before: Record<string, string | null> = { 'shared.txt': readFileSync(join(h.repo, 'shared.txt'), 'utf8'), [`r${i}-mod.txt`]: 'before\n', [`r${i}-new.txt`]: null, [`r${i}-gone.txt`]: 'to be deleted\n' };
  const run = await simulateRun(h, task, (dir) => {
    writeIn(dir, { 'shared.txt': after['shared.txt']!, [`r${i}-mod.txt`]: 'after\n', [`r${i}-new.txt`]: 'new\n' });
    git(dir, 'rm', '-q', `r${i}-gone.txt`);
  });
  if (run.task.status !== 'completed') throw new Error(`chaos harness: round ${i}'s task ended ${run.task.status}: ${JSON.stringify({ violations: run.changes.violations, verify: run.verify?.results.map((r) => [r.exitCode, r.outputTail.slice(-300)]) })}`);

  await killAcceptAt(h, task.id, step, signal);
  const next = await runCli(['tasks', '--json'], { home: h.home, cwd: h.repo });
  if (next.code !== 0) return { verdict: `the next command failed: ${next.stderr.trim()}` };
  const verdict = judge(h, task.id, base, before, after);
  if (verdict !== 'untouched') return { verdict };
  const again = await runCli(['accept', task.id], { home: h.home, cwd: h.repo });
  if (again.code !== 0) return { verdict, reacceptFailed: again.stderr.trim() };
  const second = judge(h, task.id, base, before, after);
  return second === 'accepted' ? { verdict } : { verdict, reacceptFailed: `after it: ${second}` };
}

async function killAcceptAt(h: TestHome, id: string, step: string, signal: NodeJS.Signals): Promise<void> {
  const child = spawn(process.execPath, [BIN, 'accept', id], {
    env: { ...process.env, LIGHTWORKER_HOME: h.home, LIGHTWORKER_TEST_ACCEPT_PAUSE: step },
    cwd: h.repo,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let stderr = '';
  const paused = await new Promise<boolean>((resolve) => {
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes(`accept paused at ${step}`)) resolve(true);
    });
    child.once('exit', () => resolve(false));
  });
  if (!paused) throw new Error(`chaos harness: accept ended before pausing at ${step}: ${stderr.trim()}`);
  process.kill(signal === 'SIGINT' ? -child.pid! : child.pid!, signal);
  await exited;
}

/** 'accepted', 'untouched', or what disagrees. */
function judge(h: TestHome, id: string, base: string, before: Record<string, string | null>, after: Record<string, string | null>): string {
  const status = git(h.repo, 'status', '--porcelain', '--untracked-files=all');
  if (status) return `the checkout disagrees with its branch: ${status.split('\n').join(', ')}`;
  const journals = join(h.home, 'accepts');
  const left = existsSync(journals) ? readdirSync(journals).filter((n) => n.endsWith('.json')) : [];
  if (left.length) return `an accept journal was left: ${left.join(', ')}`;
  const head = git(h.repo, 'rev-parse', 'HEAD');
  const task = requireTask(h.engine.db, id).status;
  const files = Object.fromEntries(Object.keys(after).map((p) => [p, existsSync(join(h.repo, p)) ? readFileSync(join(h.repo, p), 'utf8') : null]));
  const same = (want: Record<string, string | null>) => Object.entries(want).every(([p, v]) => files[p] === v);
  if (head === base) {
    if (task !== 'completed') return `the branch is untouched but the task is ${task}`;
    return same(before) ? 'untouched' : 'the branch is untouched but the files changed';
  }
  if (git(h.repo, 'rev-parse', 'HEAD^') !== base) return 'the branch moved by more than one commit';
  if (task !== 'accepted') return `the branch holds the accept but the task is ${task}`;
  if (!same(after)) return "the branch holds the accept but the files do not";
  if (git(h.repo, 'worktree', 'list').includes(id)) return "accepted, but the task's worktree was left";
  return 'accepted';
}
