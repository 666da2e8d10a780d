import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { BIN, runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { git, newExecuteTask, simulateRun, writeIn } from './isolation.helpers.js';

/**
 * Accept is atomic from the user's side: the real CLI killed at each step of an accept (SIGKILL, or a
 * Ctrl-C to its whole process group) leaves the user's repository either fully accepted or untouched —
 * branch tip, index and working tree agreeing — once the next command has run.
 */

let h: TestHome;
afterEach(() => h?.cleanup());

const STEPS = ['journaled', 'ref', 'mid-checkout', 'checkout', 'marked', 'cleaned'] as const;
type Step = (typeof STEPS)[number];

const BEFORE = { 'README.md': '# test repo\n', 'a.txt': 'a1\n', 'b.txt': 'b1\n', 'gone.txt': 'to be deleted\n' };
const AFTER = { 'README.md': '# test repo\nby the worker\n', 'a.txt': 'a2\n', 'b.txt': 'b2\n', 'new.txt': 'new\n' };

/** A completed, verified task that modifies three files, adds one and deletes one. */
async function completedTask(): Promise<{ id: string; base: string }> {
  h = makeHome();
  writeIn(h.repo, BEFORE);
  git(h.repo, 'add', '-A');
  git(h.repo, 'commit', '-qm', 'files');
  const task = await newExecuteTask(h);
  const run = await simulateRun(h, task, (dir) => {
    writeIn(dir, AFTER);
    git(dir, 'rm', '-q', 'gone.txt');
  });
  expect(run.task.status).toBe('completed');
  return { id: task.id, base: git(h.repo, 'rev-parse', 'HEAD') };
}

/** Start `lightworker accept` paused at `step` (the test hook), in its own process group as a terminal would. */
async function acceptPausedAt(id: string, step: Step): Promise<{ kill: (sig: NodeJS.Signals) => Promise<{ code: number | null; signal: string | null }> }> {
  const child = spawn(process.execPath, [BIN, 'accept', id], {
    env: { ...process.env, LIGHTWORKER_HOME: h.home, LIGHTWORKER_TEST_ACCEPT_PAUSE: step },
    cwd: h.repo,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes(`accept paused at ${step}`)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`accept exited (${code}) before pausing at ${step}: ${stderr}`)));
  });
  return {
    kill: async (sig) => {
      // SIGINT as Ctrl-C sends it: to the whole foreground group, git children included.
      process.kill(sig === 'SIGINT' ? -child.pid! : child.pid!, sig);
      return await exited;
    },
  };
}

/** The touched paths' content as the checkout has it (null: absent). */
function contents(): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const f of ['README.md', 'a.txt', 'b.txt', 'gone.txt', 'new.txt']) out[f] = existsSync(join(h.repo, f)) ? readFileSync(join(h.repo, f), 'utf8') : null;
  return out;
}

const AS_BEFORE = { ...BEFORE, 'new.txt': null };
const AS_AFTER = { ...AFTER, 'gone.txt': null };

/** Branch, index and working tree agree, and match either the whole accept or none of it. */
function expectConsistent(id: string, base: string): 'accepted' | 'untouched' {
  expect(git(h.repo, 'status', '--porcelain', '--untracked-files=all')).toBe('');
  const head = git(h.repo, 'rev-parse', 'HEAD');
  const status = requireTask(h.engine.db, id).status;
  const journals = join(h.home, 'accepts');
  expect(existsSync(journals) ? readdirSync(journals).filter((f) => f.endsWith('.json')) : []).toEqual([]);
  // The folder goes with the last journal: the next command's look for interrupted accepts is one stat.
  expect(existsSync(journals)).toBe(false);
  if (head === base) {
    expect(status).toBe('completed');
    expect(contents()).toEqual(AS_BEFORE);
    return 'untouched';
  }
  expect(git(h.repo, 'rev-parse', 'HEAD^')).toBe(base);
  expect(status).toBe('accepted');
  expect(contents()).toEqual(AS_AFTER);
  expect(git(h.repo, 'worktree', 'list')).not.toContain(id);
  return 'accepted';
}

describe('accept killed at each step', () => {
  for (const step of STEPS) {
    it(`SIGKILL at ${step}: the next command finishes or undoes it, and an undone one can be accepted again`, async () => {
      const { id, base } = await completedTask();
      const cli = await acceptPausedAt(id, step);
      await cli.kill('SIGKILL');
      const next = await runCli(['show', id, '--json'], { home: h.home, cwd: h.repo });
      expect(next.code, next.stderr).toBe(0);
      const state = expectConsistent(id, base);
      // Only an accept killed before its ref moved is undone; from then on it is finished.
      expect(state).toBe(step === 'journaled' ? 'untouched' : 'accepted');
      const [recovered] = listEvents(h.engine.db, { taskId: id, types: ['task.accept_recovered'] }).events;
      expect(recovered.payload).toMatchObject({ outcome: state === 'accepted' ? 'finished' : 'undone' });
      if (state === 'untouched') {
        const again = await runCli(['accept', id], { home: h.home, cwd: h.repo });
        expect(again.code, again.stderr).toBe(0);
        expect(expectConsistent(id, base)).toBe('accepted');
      }
    }, 120_000);

    it(`Ctrl-C at ${step}: the accept finishes before the CLI exits`, async () => {
      const { id, base } = await completedTask();
      const cli = await acceptPausedAt(id, step);
      // It still ends as Ctrl-C ends a program, once the accept is settled.
      expect(await cli.kill('SIGINT')).toEqual({ code: null, signal: 'SIGINT' });
      expect(expectConsistent(id, base)).toBe('accepted');
    }, 120_000);
  }

  it("an edit the user makes after the crash is kept; the rest of the accept is finished around it", async () => {
    const { id, base } = await completedTask();
    const cli = await acceptPausedAt(id, 'ref');
    await cli.kill('SIGKILL');
    writeFileSync(join(h.repo, 'a.txt'), 'my own edit\n');
    const next = await runCli(['tasks'], { home: h.home, cwd: h.repo });
    expect(next.code, next.stderr).toBe(0);
    expect(git(h.repo, 'rev-parse', 'HEAD^')).toBe(base);
    expect(requireTask(h.engine.db, id).status).toBe('accepted');
    expect(contents()).toEqual({ ...AS_AFTER, 'a.txt': 'my own edit\n' });
    // Only the user's edit differs from the branch; the index agrees with it everywhere.
    expect(git(h.repo, 'status', '--porcelain', '--untracked-files=all')).toBe('M a.txt');
    const [recovered] = listEvents(h.engine.db, { taskId: id, types: ['task.accept_recovered'] }).events;
    expect(recovered.payload).toMatchObject({ outcome: 'finished', leftAlone: ['a.txt'] });
  }, 120_000);
});
