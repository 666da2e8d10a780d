import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { Engine } from '../../main/engine.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import type { Task } from '../../main/tasks/types.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/env.js';
import { treeHash } from './isolation.helpers.js';

/**
 * Copy isolation: a workspace that is not a git repository is worked on in a private git copy; accept
 * copies the task's changes back only when the originals are unchanged since the copy.
 */

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups) c();
  cleanups = [];
});

/** A linked worker that modifies, adds and deletes files in its working directory. */
const EDITOR = `import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
appendFileSync('a.txt', 'edited by the worker\\n');
mkdirSync('sub', { recursive: true });
writeFileSync('sub/new.txt', 'new from the worker\\n');
rmSync('del.txt');
mkdirSync('node_modules/dep', { recursive: true });
writeFileSync('node_modules/dep/index.js', 'ignored output\\n');
console.log(JSON.stringify({ summary: 'edited', files_changed: ['a.txt', 'sub/new.txt', 'del.txt'], notes: null }));
`;

interface Ctx {
  dir: string;
  home: string;
  folder: string;
  engine: Engine;
  call: (name: string, input: unknown) => Promise<any>;
  run: () => Promise<void>;
}

function setup(extraConfig = ''): Ctx {
  const t = tempDir();
  const home = join(t.dir, 'home');
  mkdirSync(home, { recursive: true });
  writeFileSync(join(t.dir, 'editor.mjs'), EDITOR);
  writeFileSync(join(home, 'config.toml'), `[workers.editor]\ncommand = ${JSON.stringify([process.execPath, join(t.dir, 'editor.mjs'), '{prompt}'])}\n${extraConfig}`);
  // A plain folder: no git anywhere above it (tmp), a node_modules the copy must skip.
  const folder = join(t.dir, 'plain');
  mkdirSync(join(folder, 'node_modules', 'big'), { recursive: true });
  writeFileSync(join(folder, 'a.txt'), 'original a\n');
  writeFileSync(join(folder, 'keep.txt'), 'untouched\n');
  writeFileSync(join(folder, 'del.txt'), 'to be deleted\n');
  writeFileSync(join(folder, 'node_modules', 'big', 'index.js'), 'module\n');
  const engine = new Engine({ home });
  cleanups.push(() => {
    engine.close();
    t.cleanup();
  });
  const call = (name: string, input: unknown) => runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, name, input) as Promise<any>;
  const run = async () => {
    const r = await runCli(['run', '--until-idle', '--timeout', '120'], { home, timeoutMs: 150_000 });
    expect(r.code, r.stderr).toBe(0);
  };
  return { dir: t.dir, home, folder, engine, call, run };
}

const VERIFY = [[process.execPath, '-e', "require('fs').accessSync('sub/new.txt')"]];

async function submitEdit(c: Ctx): Promise<string> {
  const { task } = await c.call('delegate_task', { objective: 'edit the files', kind: 'execute', workspace: c.folder, worker: 'editor', mode: 'auto_execute', verify: VERIFY });
  return task.id as string;
}

const show = (c: Ctx, id: string): Task => requireTask(c.engine.db, id);

describe('copy isolation (real CLI runner)', () => {
  it('a plain folder: the worker edits a copy, LightWorker verifies it, accept copies added, modified and deleted files back', async () => {
    const c = setup();
    const id = await submitEdit(c);
    const before = treeHash(c.folder);
    await c.run();
    const task = show(c, id);
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    // The worker never touched the folder: it worked in the copy.
    expect(treeHash(c.folder)).toBe(before);
    const copy = listEvents(c.engine.db, { taskId: id, types: ['copy.created'] }).events[0].payload;
    expect(copy).toMatchObject({ from: c.folder, files: 3 }); // node_modules was not copied
    expect(task.worktreePath).toBe(copy.path);

    const diff = await c.call('get_task_diff', { id });
    expect([...diff.files].sort()).toEqual(['a.txt', 'del.txt', 'sub/new.txt']); // node_modules output stays out
    expect(diff.diff).toContain('+edited by the worker');

    await expect(c.call('accept_task', { id, branch: 'elsewhere' })).rejects.toMatchObject({ code: 'invalid_input', details: { field: 'branch' } });
    const acc = await c.call('accept_task', { id });
    expect(acc.task.status).toBe('accepted');
    expect(acc.copiedTo).toBe(c.folder);
    expect(readFileSync(join(c.folder, 'a.txt'), 'utf8')).toBe('original a\nedited by the worker\n');
    expect(readFileSync(join(c.folder, 'sub', 'new.txt'), 'utf8')).toBe('new from the worker\n');
    expect(existsSync(join(c.folder, 'del.txt'))).toBe(false);
    expect(readFileSync(join(c.folder, 'keep.txt'), 'utf8')).toBe('untouched\n');
    expect(existsSync(join(c.folder, 'node_modules', 'dep'))).toBe(false);
    expect(existsSync(join(c.folder, '.git'))).toBe(false);
    expect(readdirSync(c.folder).filter((n) => n.startsWith('.lightworker'))).toEqual([]);
    expect(existsSync(copy.path as string)).toBe(false); // the copy is removed after accept
  }, 200_000);

  it('refuses to accept, changing nothing, when the user edited a file the task changed since the copy', async () => {
    const c = setup();
    const id = await submitEdit(c);
    await c.run();
    expect(show(c, id).status).toBe('completed');
    writeFileSync(join(c.folder, 'a.txt'), 'the user edited this meanwhile\n');
    const before = treeHash(c.folder);
    await expect(c.call('accept_task', { id })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/a\.txt \(edited since the copy\).*nothing was changed/),
    });
    expect(treeHash(c.folder)).toBe(before);
    expect(existsSync(join(c.folder, 'sub'))).toBe(false);
    expect(show(c, id).status).toBe('completed');

    // A file the task adds that the user created meanwhile is refused too.
    writeFileSync(join(c.folder, 'a.txt'), 'original a\n');
    mkdirSync(join(c.folder, 'sub'));
    writeFileSync(join(c.folder, 'sub', 'new.txt'), 'mine\n');
    await expect(c.call('accept_task', { id })).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('sub/new.txt (created in the folder since the copy)') });
    expect(existsSync(join(c.folder, 'del.txt'))).toBe(true);
  }, 200_000);

  it('a folder over the copy budget fails the task with an error naming the budget, and copies nothing', async () => {
    const c = setup('[isolation.copy]\nmax_files = 2\n');
    const id = await submitEdit(c);
    await c.run();
    const task = show(c, id);
    expect(task.status).toBe('failed');
    expect(task.error?.code).toBe('invalid_input');
    expect(task.error?.message).toContain('isolation.copy.max_files = 2');
    expect(task.error?.message).toContain(c.folder);
    expect(existsSync(join(c.home, 'worktrees', id))).toBe(false);

    const bytes = setup('[isolation.copy]\nmax_bytes = 10\n');
    const big = await submitEdit(bytes);
    await bytes.run();
    expect(show(bytes, big).error?.message).toContain('isolation.copy.max_bytes = 10');
  }, 200_000);

  it('a read-only task on a plain folder runs in a copy that is removed after it', async () => {
    const c = setup();
    const before = treeHash(c.folder);
    const { task } = await c.call('delegate_task', { objective: 'look', kind: 'explore', workspace: c.folder, worker: 'editor' });
    await c.run();
    expect(show(c, task.id).status).toBe('completed');
    expect(treeHash(c.folder)).toBe(before);
    const copy = listEvents(c.engine.db, { taskId: task.id, types: ['copy.created'] }).events[0].payload;
    expect(existsSync(copy.path as string)).toBe(false);
  }, 200_000);
});
