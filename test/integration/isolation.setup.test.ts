import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../main/core/config.js';
import { getAllocation } from '../../main/store/worktrees.js';
import { PORT_BLOCK_SIZE, PORT_RANGE } from '../../main/isolation/ports.js';
import { prepareWorkspace } from '../../main/isolation/workspace.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { makeHome, makeRepo, type TestHome } from '../helpers/env.js';
import { drive, git, newExecuteTask, writeIn } from './isolation.helpers.js';

let h: TestHome;
afterEach(() => h?.cleanup());

describe('prepareWorkspace', () => {
  it('creates <home>/worktrees/<id> on lightworker/<id> from HEAD, recorded on the task, noting uncarried changes', async () => {
    h = makeHome();
    writeFileSync(join(h.repo, 'README.md'), 'uncommitted edit\n');
    const t = await newExecuteTask(h);
    const ws = await prepareWorkspace(h.engine, t);
    expect(ws.workdir).toBe(join(h.home, 'worktrees', t.id));
    expect(readFileSync(join(ws.workdir, 'README.md'), 'utf8')).toBe('# test repo\n');
    expect(git(ws.workdir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe(`lightworker/${t.id}`);
    const task = requireTask(h.engine.db, t.id);
    expect(task).toMatchObject({ worktreePath: ws.workdir, branch: `lightworker/${t.id}` });
    expect(getAllocation(h.engine.db, t.id)?.state).toBe('ready');
    const ev = listEvents(h.engine.db, { taskId: t.id, types: ['worktree.allocated'] }).events[0];
    expect(ev.payload.note).toMatch(/1 uncommitted change\(s\) .* not carried/);
  });

  it('gives two live worktrees disjoint 10-port blocks and frees them with the worktree', async () => {
    h = makeHome();
    const a = await newExecuteTask(h);
    const b = await newExecuteTask(h);
    const wa = await prepareWorkspace(h.engine, a);
    const wb = await prepareWorkspace(h.engine, b);
    const pa = Number(wa.env.LIGHTWORKER_PORT);
    const pb = Number(wb.env.LIGHTWORKER_PORT);
    expect(wa.env.LIGHTWORKER_PORT_COUNT).toBe(String(PORT_BLOCK_SIZE));
    expect(Math.abs(pa - pb)).toBeGreaterThanOrEqual(PORT_BLOCK_SIZE);
    // a's task ends and its worktree goes: its block is free for the next task
    drive(h, a.id, 'running', 'failed');
    await h.call('prune_workspaces', { apply: true, ttl_hours: 0 });
    const c = await newExecuteTask(h);
    const wc = await prepareWorkspace(h.engine, c);
    expect(Number(wc.env.LIGHTWORKER_PORT)).toBe(pa);
    expect(wc.env.LIGHTWORKER_PORT).not.toBe(wb.env.LIGHTWORKER_PORT);
  });

  it('skips a port block something outside LightWorker is listening in', async () => {
    h = makeHome();
    const srv = createServer();
    const busy = await new Promise<boolean>((r) => {
      srv.once('error', () => r(false));
      srv.listen({ port: PORT_RANGE.first + 3, host: '127.0.0.1' }, () => r(true));
    });
    try {
      const ws = await prepareWorkspace(h.engine, await newExecuteTask(h));
      const base = Number(ws.env.LIGHTWORKER_PORT);
      const taken = PORT_RANGE.first + 3;
      expect(taken >= base && taken < base + PORT_BLOCK_SIZE).toBe(false);
      if (!busy) console.warn('port was already taken by another process; the skip was still exercised');
    } finally {
      srv.close();
    }
  });

  it('allocates several worktrees of one repository at once without tripping over each other', async () => {
    h = makeHome();
    const tasks = await Promise.all([1, 2, 3, 4].map(() => newExecuteTask(h)));
    const wss = await Promise.all(tasks.map((t) => prepareWorkspace(h.engine, t)));
    expect(new Set(wss.map((w) => w.env.LIGHTWORKER_PORT)).size).toBe(4);
    // Each its own repository on its own branch; none registered in (or written into) the user's.
    for (const [i, t] of tasks.entries()) expect(git(wss[i].workdir, 'symbolic-ref', 'HEAD')).toBe(`refs/heads/lightworker/${t.id}`);
    expect(git(h.repo, 'worktree', 'list')).not.toContain(tasks[0].id);
  });

  it('copies only the globbed untracked files; .env* only when a pattern names it; runs the setup command', async () => {
    h = makeHome();
    writeIn(h.repo, {
      '.gitignore': '.env*\nconfig/*.local.json\nsecrets/\nnode_modules/\n',
      '.lightworker/setup.toml':
        'copy = ["config/*.local.json", "*", ".env.local"]\nsetup = ["node", "-e", "require(\'fs\').writeFileSync(\'setup-ran.txt\', process.env.LIGHTWORKER_PORT); console.log(\'setup says hi\')"]\n',
    });
    git(h.repo, 'add', '.gitignore', '.lightworker/setup.toml');
    git(h.repo, 'commit', '-qm', 'setup');
    writeIn(h.repo, {
      '.env': 'TOKEN=root-env\n',
      '.env.local': 'TOKEN=local\n',
      'config/dev.local.json': '{"dev":true}',
      'config/deep/x.local.json': '{}',
      'secrets/key.pem': 'nope',
      'node_modules/pkg/index.js': 'nope',
      'scratch.txt': 'untracked root file\n',
    });
    const t = await newExecuteTask(h);
    const ws = await prepareWorkspace(h.engine, t);
    const has = (p: string) => existsSync(join(ws.workdir, p));
    expect(has('config/dev.local.json')).toBe(true);
    expect(has('scratch.txt')).toBe(true); // matched by "*"
    expect(has('.env.local')).toBe(true); // named explicitly
    expect(has('.env')).toBe(false); // "*" never carries .env files
    expect(has('config/deep/x.local.json')).toBe(false);
    expect(has('secrets/key.pem')).toBe(false);
    expect(has('node_modules/pkg/index.js')).toBe(false);
    expect(readFileSync(join(ws.workdir, 'setup-ran.txt'), 'utf8')).toBe(ws.env.LIGHTWORKER_PORT);
    const ev = listEvents(h.engine.db, { taskId: t.id, types: ['worktree.setup'] }).events[0];
    expect((ev.payload.copied as string[]).sort()).toEqual(['.env.local', 'config/dev.local.json', 'scratch.txt']);
    expect(readFileSync(ev.payload.log as string, 'utf8')).toContain('setup says hi');
  });

  it('copies nothing by default, and a failing setup command fails with its log', async () => {
    h = makeHome();
    writeIn(h.repo, { '.env': 'A=1\n', 'untracked.txt': 'x' });
    const t = await newExecuteTask(h);
    const ws = await prepareWorkspace(h.engine, t);
    expect(existsSync(join(ws.workdir, '.env'))).toBe(false);
    expect(existsSync(join(ws.workdir, 'untracked.txt'))).toBe(false);

    writeIn(h.repo, { '.lightworker/setup.toml': 'setup = "echo broken >&2; exit 7"\n' });
    const t2 = await newExecuteTask(h);
    await expect(prepareWorkspace(h.engine, t2)).rejects.toMatchObject({
      code: 'worker_failed',
      message: expect.stringMatching(/exit 7.*setup-1\.log/),
    });
    expect(readFileSync(join(h.home, 'artifacts', t2.id, 'setup-1.log'), 'utf8')).toContain('broken');
  });

  it("settings override the repository's setup.toml", async () => {
    h = makeHome();
    writeIn(h.repo, { '.lightworker/setup.toml': 'copy = ["a.txt"]\n', 'a.txt': 'a', 'b.txt': 'b' });
    (h.engine.config as unknown as { setup: Record<string, unknown> }).setup = { [h.repo]: { copy: ['b.txt'] } };
    const ws = await prepareWorkspace(h.engine, await newExecuteTask(h));
    expect(existsSync(join(ws.workdir, 'b.txt'))).toBe(true);
    expect(existsSync(join(ws.workdir, 'a.txt'))).toBe(false);
  });

  it('refuses when the disk reserve would be crossed, or home and repository contain each other', async () => {
    const config = defaultConfig();
    config.worktrees.disk_reserve_bytes = Number.MAX_SAFE_INTEGER;
    h = makeHome({ config });
    const t = await newExecuteTask(h);
    await expect(prepareWorkspace(h.engine, t)).rejects.toMatchObject({ code: 'disk_full' });
    expect(getAllocation(h.engine.db, t.id)).toBeNull();

    h.engine.config.worktrees.disk_reserve_bytes = 0;
    const inner = makeRepo(join(h.home, 'repo-inside-home'));
    const { task } = await h.call('delegate_task', { objective: 'x', kind: 'execute', workspace: inner, mode: 'auto_execute' });
    await expect(prepareWorkspace(h.engine, requireTask(h.engine.db, task.id))).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/inside the LightWorker home/),
    });
  });

  it("re-running an attempt keeps the earlier attempt's commits on a kept branch", async () => {
    h = makeHome();
    const t = await newExecuteTask(h);
    const ws = await prepareWorkspace(h.engine, t);
    mkdirSync(join(ws.workdir, 'src'));
    writeFileSync(join(ws.workdir, 'src/first.txt'), 'first attempt\n');
    drive(h, t.id, 'running', 'failed');
    await h.call('retry_task', { id: t.id });
    const again = drive(
      h,
      t.id,
      ...(requireTask(h.engine.db, t.id).status === 'awaiting_approval' ? (['queued', 'starting'] as const) : (['starting'] as const)),
    );
    const ws2 = await prepareWorkspace(h.engine, again);
    expect(existsSync(join(ws2.workdir, 'src/first.txt'))).toBe(false);
    const kept = git(h.repo, 'branch', '--list', `lightworker/${t.id}-attempt-*`);
    expect(kept).toContain(`lightworker/${t.id}-attempt-1`);
    expect(git(h.repo, 'show', `${kept.replace(/^[*+ ]+/, '')}:src/first.txt`)).toBe('first attempt');
  });
});
