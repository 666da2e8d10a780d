import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { git, newExecuteTask, simulateRun } from './isolation.helpers.js';

let h: TestHome;
afterEach(() => h?.cleanup());

describe('accept_task', () => {
  it('applies a verified task onto the current branch as one commit, removes the worktree and keeps the branch', async () => {
    h = makeHome();
    writeFileSync(join(h.repo, 'notes.txt'), 'my own untracked notes\n');
    const task = await newExecuteTask(h);
    const run = await simulateRun(h, task, (dir) => {
      writeFileSync(join(dir, 'README.md'), '# test repo\nchanged by the worker\n');
      writeFileSync(join(dir, 'new.txt'), 'new file\n');
    });
    expect(run.task.status).toBe('completed');
    expect(run.changes.changedFiles.sort()).toEqual(['README.md', 'new.txt']);
    const before = git(h.repo, 'rev-parse', 'HEAD');

    const r = await h.call('accept_task', { id: task.id });
    expect(r.task.status).toBe('accepted');
    expect(r.branch).toBe('main');
    expect(git(h.repo, 'rev-parse', 'HEAD^')).toBe(before);
    expect(git(h.repo, 'rev-parse', 'HEAD')).toBe(r.commit);
    expect(readFileSync(join(h.repo, 'README.md'), 'utf8')).toContain('changed by the worker');
    expect(readFileSync(join(h.repo, 'new.txt'), 'utf8')).toBe('new file\n');
    expect(git(h.repo, 'status', '--porcelain')).toBe('?? notes.txt');
    expect(existsSync(run.ws.workdir)).toBe(false);
    expect(git(h.repo, 'branch', '--list', `lightworker/${task.id}`)).toContain(task.id);
    expect(git(h.repo, 'worktree', 'list')).not.toContain(task.id);
  });

  it("keeps the user's staged and unstaged work in other files out of the commit and intact", async () => {
    h = makeHome();
    writeFileSync(join(h.repo, 'other.txt'), 'v1\n');
    writeFileSync(join(h.repo, 'gone.txt'), 'to be deleted\n');
    git(h.repo, 'add', '.');
    git(h.repo, 'commit', '-qm', 'more files');
    const task = await newExecuteTask(h);
    await simulateRun(h, task, (dir) => {
      git(dir, 'rm', '-q', 'gone.txt');
      writeFileSync(join(dir, 'README.md'), '# improved\n');
    });
    writeFileSync(join(h.repo, 'other.txt'), 'staged v2\n');
    git(h.repo, 'add', 'other.txt');
    writeFileSync(join(h.repo, 'other.txt'), 'unstaged v3\n');

    const r = await h.call('accept_task', { id: task.id });
    expect(git(h.repo, 'show', '--name-status', '--format=', r.commit).split('\n').sort()).toEqual(['D\tgone.txt', 'M\tREADME.md']);
    expect(existsSync(join(h.repo, 'gone.txt'))).toBe(false);
    expect(readFileSync(join(h.repo, 'README.md'), 'utf8')).toBe('# improved\n');
    expect(readFileSync(join(h.repo, 'other.txt'), 'utf8')).toBe('unstaged v3\n');
    expect(git(h.repo, 'show', ':other.txt')).toBe('staged v2');
    expect(git(h.repo, 'status', '--porcelain')).toBe('MM other.txt');
  });

  it('two accepts at once apply the task exactly once', async () => {
    h = makeHome();
    const task = await newExecuteTask(h);
    await simulateRun(h, task, (dir) => writeFileSync(join(dir, 'once.txt'), 'once\n'));
    const before = git(h.repo, 'rev-parse', 'HEAD');
    const results = await Promise.allSettled([h.call('accept_task', { id: task.id }), h.call('accept_task', { id: task.id })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(git(h.repo, 'rev-list', '--count', `${before}..HEAD`)).toBe('1');
  });

  it('refuses when a touched file has an uncommitted edit, and the edit survives byte for byte', async () => {
    h = makeHome();
    const task = await newExecuteTask(h);
    await simulateRun(h, task, (dir) => writeFileSync(join(dir, 'README.md'), '# from the worker\n'));
    const mine = Buffer.from('# my edit \u00e9\r\nno newline at end');
    writeFileSync(join(h.repo, 'README.md'), mine);
    const head = git(h.repo, 'rev-parse', 'HEAD');
    const status = git(h.repo, 'status', '--porcelain');

    await expect(h.call('accept_task', { id: task.id })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('README.md'),
    });
    expect(readFileSync(join(h.repo, 'README.md')).equals(mine)).toBe(true);
    expect(git(h.repo, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(h.repo, 'status', '--porcelain')).toBe(status);
    expect((await h.call('get_task', { id: task.id })).task.status).toBe('completed');
  });

  it('refuses a conflicting apply and changes nothing; --branch squashes onto another branch instead', async () => {
    h = makeHome();
    const task = await newExecuteTask(h);
    await simulateRun(h, task, (dir) => writeFileSync(join(dir, 'README.md'), '# worker line\n'));
    writeFileSync(join(h.repo, 'README.md'), '# user line\n');
    git(h.repo, 'commit', '-qam', 'user change');
    const head = git(h.repo, 'rev-parse', 'HEAD');
    await expect(h.call('accept_task', { id: task.id })).rejects.toMatchObject({ code: 'conflict' });
    expect(git(h.repo, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(h.repo, 'status', '--porcelain')).toBe('');

    git(h.repo, 'branch', 'review', 'HEAD~1');
    const r = await h.call('accept_task', { id: task.id, branch: 'review' });
    expect(r.branch).toBe('review');
    expect(git(h.repo, 'show', 'review:README.md')).toBe('# worker line');
    expect(git(h.repo, 'rev-parse', 'HEAD')).toBe(head);
    expect(readFileSync(join(h.repo, 'README.md'), 'utf8')).toBe('# user line\n');
  });

  it('accepts only completed, verified tasks; no verify commands needs unverified; MCP needs allow_mcp', async () => {
    h = makeHome();
    const failing = await newExecuteTask(h, { verify: [['node', '-e', 'process.exit(3)']] });
    const run = await simulateRun(h, failing, (dir) => writeFileSync(join(dir, 'a.txt'), 'a\n'));
    expect(run.task.status).toBe('failed');
    await expect(h.call('accept_task', { id: failing.id })).rejects.toMatchObject({ code: 'illegal_transition' });

    const noVerify = await newExecuteTask(h, { verify: [] });
    await simulateRun(h, noVerify, (dir) => writeFileSync(join(dir, 'b.txt'), 'b\n'));
    await expect(h.call('accept_task', { id: noVerify.id })).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringContaining('unverified'),
    });
    await expect(h.call('accept_task', { id: noVerify.id, unverified: true }, 'mcp')).rejects.toMatchObject({ code: 'forbidden' });
    const r = await h.call('accept_task', { id: noVerify.id, unverified: true });
    expect(r.task.status).toBe('accepted');
    expect(readFileSync(join(h.repo, 'b.txt'), 'utf8')).toBe('b\n');
  });
});
