import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { git, newExecuteTask, simulateRun } from './isolation.helpers.js';

/** Task commits carry the user as author, LightWorker as committer; `[git] author` overrides. */
let h: TestHome | null = null;
afterEach(() => {
  h?.cleanup();
  h = null;
});

const who = (repo: string, ref: string) => git(repo, 'log', '-1', '--format=%an <%ae> / %cn <%ce>', ref);
/** A task's branch lives in its own repository (its worktree) until accept. */
const taskRepo = (id: string) => join(h!.home, 'worktrees', id);

async function runOne(home: TestHome): Promise<string> {
  const r = await simulateRun(home, await newExecuteTask(home), (dir) => writeFileSync(join(dir, 'x.txt'), 'hello\n'));
  expect(r.task.status).toBe('completed');
  return r.task.id;
}

describe('commit identity', () => {
  it("task commits are authored by the repository's user and committed by LightWorker; accept keeps that author", async () => {
    h = makeHome();
    const id = await runOne(h);
    expect(who(taskRepo(id), `lightworker/${id}`)).toBe('Test <test@example.com> / LightWorker <lightworker@localhost>');
    await h.call('accept_task', { id });
    expect(who(h.repo, 'main')).toBe('Test <test@example.com> / Test <test@example.com>'); // accepted by the user
  });

  it('falls back to the global git config, then to LightWorker when nobody is configured', async () => {
    h = makeHome();
    git(h.repo, 'config', '--unset', 'user.name');
    git(h.repo, 'config', '--unset', 'user.email');
    const globalHome = join(h.root, 'user-home');
    mkdirSync(globalHome);
    const prevHome = process.env.HOME;
    const prevXdg = process.env.XDG_CONFIG_HOME;
    try {
      process.env.HOME = globalHome;
      process.env.XDG_CONFIG_HOME = join(globalHome, '.config');
      execFileSync('git', ['config', '--global', 'user.name', 'Global Person'], { env: process.env });
      execFileSync('git', ['config', '--global', 'user.email', 'global@example.com'], { env: process.env });
      const id = await runOne(h);
      expect(who(taskRepo(id), `lightworker/${id}`)).toBe('Global Person <global@example.com> / LightWorker <lightworker@localhost>');
      execFileSync('git', ['config', '--global', '--unset', 'user.name'], { env: process.env });
      const anon = await runOne(h);
      expect(who(taskRepo(anon), `lightworker/${anon}`)).toBe('LightWorker <lightworker@localhost> / LightWorker <lightworker@localhost>');
    } finally {
      process.env.HOME = prevHome;
      if (prevXdg === undefined) delete process.env.XDG_CONFIG_HOME;
      else process.env.XDG_CONFIG_HOME = prevXdg;
    }
  });

  it('[git] author in config.toml wins, and a malformed one is refused naming the key', async () => {
    h = makeHome();
    h.configure('[git]\nauthor = "Ada Lovelace <ada@example.com>"\n');
    const id = await runOne(h);
    expect(who(taskRepo(id), `lightworker/${id}`)).toBe('Ada Lovelace <ada@example.com> / LightWorker <lightworker@localhost>');
    await expect(h.call('update_settings', { settings: { git: { author: 'just a name' } } })).rejects.toThrow(/git\.author: expected "Name <email>"/);
  });
});
