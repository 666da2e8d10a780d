import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
import { git } from './isolation.helpers.js';

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

describe('execute task end to end through the CLI (mock worker)', () => {
  it('approve → worktree → worker → diff → verify fails → auto-repair → verify passes → accept', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const home = join(t.dir, 'home');
    withTestStore(home);
    const repo = makeRepo(join(t.dir, 'repo'));
    const cli = (...args: string[]) => runCli(args, { home, cwd: repo });
    const verify = JSON.stringify(['node', '-e', 'process.exit(require("fs").existsSync("fixed.txt") ? 0 : 1)']);
    const mock = JSON.stringify({
      mock: { write_files: { 'hello.txt': 'hello from the worker\n' }, followup: { write_files: { 'fixed.txt': 'repaired\n' } } },
    });
    const sub = await cli(
      'submit',
      'add hello.txt',
      '--kind',
      'execute',
      '--worker',
      'mock',
      '--verify',
      verify,
      '--metadata',
      mock,
      '--json',
    );
    expect(sub.code, sub.stderr).toBe(0);
    const id = JSON.parse(sub.stdout).task.id as string;
    expect((await cli('approve', id)).code).toBe(0);

    const run = await cli('run', '--until-idle', '--timeout', '120');
    expect(run.code, run.stderr).toBe(0);
    const shown = JSON.parse((await cli('show', id, '--json')).stdout);
    const task = shown.task ?? shown;
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    expect(task.worktreePath).toBe(join(home, 'worktrees', id));

    const lines = (await cli('events', '--task', id, '--json')).stdout.split('\n').filter(Boolean);
    const list = lines.map((l) => JSON.parse(l)) as { type: string; payload: Record<string, unknown> }[];
    const verdicts = list.filter((e) => e.type === 'verify.completed').map((e) => e.payload.ok);
    expect(verdicts).toEqual([false, true]);

    const diff = await cli('diff', id);
    expect(diff.stdout).toContain('+hello from the worker');
    expect(diff.stdout).toContain('+repaired');

    const acc = await cli('accept', id, '--json');
    expect(acc.code, acc.stderr).toBe(0);
    expect(JSON.parse(acc.stdout).task.status).toBe('accepted');
    expect(readFileSync(join(repo, 'hello.txt'), 'utf8')).toBe('hello from the worker\n');
    expect(readFileSync(join(repo, 'fixed.txt'), 'utf8')).toBe('repaired\n');
    expect(git(repo, 'log', '-1', '--format=%an')).toBe('Test'); // the repository's user, not LightWorker
    expect(existsSync(join(home, 'worktrees', id))).toBe(false);

    // Accept keeps the task branch; prune offers it, since its whole change is the accepted commit.
    const prune = await cli('prune', '--json');
    expect(JSON.parse(prune.stdout).items).toEqual([expect.objectContaining({ kind: 'branch', branch: `lightworker/${id}`, action: 'remove' })]);
  }, 120_000);

  it('a worker writing into the source checkout fails the task with the offending path', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const home = join(t.dir, 'home');
    withTestStore(home);
    const repo = makeRepo(join(t.dir, 'repo'));
    const cli = (...args: string[]) => runCli(args, { home, cwd: repo });
    const evil = join(repo, 'escaped.txt');
    const mock = JSON.stringify({ mock: { write_files: { 'inside.txt': 'fine\n', [evil]: 'outside\n' } } });
    const sub = await cli('submit', 'write outside', '--kind', 'execute', '--mode', 'auto_execute', '--metadata', mock, '--json');
    const id = JSON.parse(sub.stdout).task.id as string;
    expect((await cli('run', '--until-idle', '--timeout', '120')).code).toBe(0);
    const shown = JSON.parse((await cli('show', id, '--json')).stdout);
    const task = shown.task ?? shown;
    expect(task.status).toBe('failed');
    expect(task.error.code).toBe('boundary_violation');
    expect(task.error.message).toContain(evil);
    const acc = await cli('accept', id);
    expect(acc.code).not.toBe(0);
  }, 120_000);
});
