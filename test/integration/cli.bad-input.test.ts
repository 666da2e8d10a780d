import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli, type CliResult } from '../helpers/cli.js';
import { makeHome, makeRepo, tempDir } from '../helpers/env.js';

/** Bad input through the real CLI: a clear `invalid_input` naming the field, exit 2, nothing stored. */
describe('bad input is refused at submit', () => {
  let dir: string;
  let cleanup: () => void;
  let home: string;
  let repo: string;
  const taskCount = async () => JSON.parse((await runCli(['tasks', '--json'], { home })).stdout).tasks.length as number;

  beforeAll(() => {
    ({ dir, cleanup } = tempDir('lw-bad-input-'));
    home = join(dir, 'home');
    repo = makeRepo(join(dir, 'repo'));
  });
  afterAll(() => cleanup?.());

  it('an unknown --worker names the field and the known workers; a linked worker is accepted', async () => {
    const r = await runCli(['submit', '--workspace', repo, '--worker', 'nosuchworker', 'hello'], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/worker: unknown worker "nosuchworker" \(known: .*mock.*codex.*\)/);
    expect(await taskCount()).toBe(0);

    expect((await runCli(['workers', 'link', 'mine', '--command-json', '["echo","{prompt}"]'], { home })).code).toBe(0);
    const linked = await runCli(['submit', '--workspace', repo, '--worker', 'mine', 'hello'], { home });
    expect(linked.code, linked.stderr).toBe(0);
    expect(await taskCount()).toBe(1);
  });

  it('an unknown worker is refused through the command table for MCP too, and in a batch', async () => {
    const h = makeHome();
    try {
      await expect(h.call('delegate_task', { objective: 'x', workspace: h.repo, worker: 'ghost' }, 'mcp')).rejects.toMatchObject({
        code: 'invalid_input',
        message: expect.stringContaining('worker: unknown worker "ghost"'),
      });
      await expect(
        h.call('delegate_batch', { tasks: [{ objective: 'a', workspace: h.repo, worker: 'mock' }, { objective: 'b', workspace: h.repo, worker: 'ghost' }] }, 'mcp'),
      ).rejects.toMatchObject({ message: expect.stringContaining('tasks[1].worker: unknown worker "ghost"') });
      expect((await h.call('list_tasks', {})).tasks).toHaveLength(0);
    } finally {
      h.cleanup();
    }
  });

  it('a NUL byte in the objective or a verify command is refused naming the field', async () => {
    const before = await taskCount();
    const file = join(dir, 'nul.txt');
    writeFileSync(file, 'fix\u0000this');
    const r = await runCli(['submit', '--workspace', repo, '--worker', 'mock', '--objective-file', file], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('objective: contains a NUL byte');
    expect(r.stderr).not.toContain('internal');

    const batch = join(dir, 'batch.json');
    writeFileSync(batch, JSON.stringify({ tasks: [{ objective: 'ok', workspace: repo, worker: 'mock', verify: [['sh', '-c', 'true\u0000']] }] }));
    const b = await runCli(['submit', '--batch', batch], { home });
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('tasks[0].verify[0][2]: contains a NUL byte');
    expect(await taskCount()).toBe(before);
  });

  it('a missing --objective-file names the option and the path', async () => {
    const missing = join(dir, 'does-not-exist.md');
    const r = await runCli(['submit', '--workspace', repo, '--objective-file', missing], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--objective-file: cannot read ${missing}: no such file`);
    expect(r.stderr).toContain('[invalid_input]');
    expect(r.stderr).not.toContain('ENOENT');
  });
});

/**
 * A home this user may read but not write (another user's, or a read-only mount): reads work, a write
 * says which file it could not write. Root ignores permission bits, so as root the CLI runs as uid
 * `nobody` against a root-owned home; otherwise the home is made read-only for ourselves.
 */
describe('a read-only home', () => {
  let dir: string;
  let cleanup: () => void;
  let home: string;
  let repo: string;
  let taskId: string;
  const asRoot = process.getuid?.() === 0;
  const dropper = asRoot ? ['/usr/bin/setpriv', '/bin/setpriv', '/usr/sbin/runuser', '/sbin/runuser'].find((p) => existsSync(p)) : undefined;
  const skipReason = asRoot && !dropper ? 'running as root without setpriv or runuser: cannot act as another uid' : null;
  if (skipReason) {
    if (process.env.CI === 'true') throw new Error(skipReason);
    console.warn(`skipping read-only home tests: ${skipReason}`);
  }

  /** The CLI as a user who may read the home but not write it. */
  function runReadonly(args: string[]): Promise<CliResult> {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LIGHTWORKER_HOME: home };
    const node = [process.execPath, BIN, ...args];
    const argv = !asRoot
      ? node
      : dropper!.endsWith('setpriv')
        ? [dropper!, '--reuid=65534', '--regid=65534', '--clear-groups', ...node]
        : [dropper!, '-u', 'nobody', '--', ...node];
    return new Promise((resolve) => {
      execFile(argv[0], argv.slice(1), { env, cwd: dir, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      });
    });
  }

  function setModes(path: string, dirMode: number, fileMode: number): void {
    const st = statSync(path);
    chmodSync(path, st.isDirectory() ? dirMode : fileMode);
    if (st.isDirectory()) for (const name of readdirSync(path)) setModes(join(path, name), dirMode, fileMode);
  }

  beforeAll(async () => {
    if (skipReason) return;
    ({ dir, cleanup } = tempDir('lw-ro-home-'));
    home = join(dir, 'home');
    repo = makeRepo(join(dir, 'repo'));
    const r = await runCli(['submit', '--workspace', repo, '--worker', 'mock', '--json', 'read me later'], { home });
    expect(r.code, r.stderr).toBe(0);
    taskId = JSON.parse(r.stdout).task.id;
    // A home from before logs/ existed: the folder cannot be created now, and reads must not care.
    rmSync(join(home, 'logs'), { recursive: true });
    chmodSync(dir, 0o755);
    // As root: readable by everyone, writable by root only. As ourselves: writable by nobody.
    setModes(home, asRoot ? 0o755 : 0o555, asRoot ? 0o644 : 0o444);
  }, 60_000);

  afterAll(() => {
    if (home) setModes(home, 0o755, 0o644);
    cleanup?.();
  });

  it.skipIf(Boolean(skipReason))('reads work: tasks and show', async () => {
    const tasks = await runReadonly(['tasks', '--json']);
    expect(tasks.stderr).toBe('');
    expect(tasks.code).toBe(0);
    expect(JSON.parse(tasks.stdout).tasks.map((t: { id: string }) => t.id)).toEqual([taskId]);
    const show = await runReadonly(['show', taskId]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('read me later');
  });

  it.skipIf(Boolean(skipReason))('a write names the database it cannot write and changes nothing', async () => {
    const r = await runReadonly(['submit', '--workspace', repo, '--worker', 'mock', 'another']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`cannot write ${join(home, 'lightworker.db')}`);
    expect(r.stderr).toContain('read-only');
    expect(r.stderr).toContain('[forbidden]');
    expect(r.stderr).not.toContain('attempt to write a readonly database');
    const tasks = await runReadonly(['tasks', '--json']);
    expect(JSON.parse(tasks.stdout).tasks).toHaveLength(1);
    // Not a trick of this test: the owner can still write.
    if (asRoot) expect(execFileSync(process.execPath, [BIN, 'tasks', '--json'], { env: { ...process.env, LIGHTWORKER_HOME: home } }).toString()).toContain(taskId);
  });
});
