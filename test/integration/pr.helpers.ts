import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { getPull } from '../../main/store/pulls.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import type { TestHome } from '../helpers/env.js';
import { FORGE_REPO, startScriptedForge, type ScriptedForge } from '../fixtures/forge/scripted-forge.js';

export const TOKEN_ENV = 'LW_TEST_FORGE_TOKEN';
export const TOKEN = 'lwforge_9fQ2xT7mK4pL8vN3';

export function gitOut(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The scripted forge's checks: ci/lint fails while app.js still says TODO at the pushed commit. */
export function lintChecks(bare: string) {
  return (sha: string) => {
    const text = execFileSync('git', ['--git-dir', bare, 'show', `${sha}:app.js`], { encoding: 'utf8' });
    return text.includes('TODO')
      ? [{ name: 'ci/lint', state: 'failure' as const, log: `npm run lint\n${'noise line\n'.repeat(50)}app.js:1 error: a TODO is left in the code (no-todo)\n1 problem\n` }]
      : [{ name: 'ci/lint', state: 'success' as const, log: 'ok\n' }];
  };
}

/**
 * A home whose repository has a bare `origin` (file transport) and a scripted forge named `local` of the
 * given kind serving it, its token in TOKEN_ENV (set in this process for in-process calls).
 */
export async function forgeHome(h: TestHome, kind: 'github' | 'gitlab' | 'gitea' = 'github', extra = ''): Promise<{ bare: string; forge: ScriptedForge; toml: string }> {
  const bare = join(h.root, 'origin.git');
  execFileSync('git', ['clone', '-q', '--bare', h.repo, bare]);
  gitOut(h.repo, 'remote', 'add', 'origin', `file://${bare}`);
  const forge = await startScriptedForge({ bare, token: TOKEN });
  const toml = `[scheduler]\nkill_grace_ms = 300\n[pr]\npoll_s = 0.05\nmax_poll_s = 0.2\n${extra}\n[forges.local]\nkind = "${kind}"\nmatch = "file://"\napi_url = "${forge.api[kind]}"\ntoken_env = "${TOKEN_ENV}"\nrepo = "${FORGE_REPO}"\n`;
  h.configure(toml);
  process.env[TOKEN_ENV] = TOKEN;
  return { bare, forge, toml };
}

export function prHarness(home: () => TestHome) {
  const cli = (args: string[], env: Record<string, string> = { [TOKEN_ENV]: TOKEN }): Promise<CliResult> => runCli(args, { home: home().home, timeoutMs: 90_000, env });
  const runUntilIdle = async (): Promise<void> => {
    const r = await cli(['run', '--until-idle']);
    expect(r.code, r.stderr).toBe(0);
  };
  return {
    cli,
    runUntilIdle,
    task: (id: string) => getTask(home().engine.db, id)!,
    pull: (id: string) => getPull(home().engine.db, id),
    events: (id: string, type: string) => listEvents(home().engine.db, { taskId: id, types: [type] }).events,
    /** A completed execute task whose first turn leaves a TODO in app.js and whose fix turns (`fixWhen` in the prompt) remove it. */
    async todoTask(fixWhen: string): Promise<string> {
      const r = await home().call('delegate_task', {
        objective: 'add app.js',
        name: 'Add app',
        workspace: home().repo,
        kind: 'execute',
        mode: 'auto_execute',
        verify: [['node', '-e', 'process.exit(0)']],
        metadata: { mock: { write_files: { 'app.js': 'TODO\n' }, when: [{ prompt_includes: fixWhen, write_files: { 'app.js': 'done\n' } }] } },
      });
      const id = r.task.id as string;
      await runUntilIdle();
      expect(getTask(home().engine.db, id)!.status, JSON.stringify(getTask(home().engine.db, id)!.error)).toBe('completed');
      return id;
    },
  };
}

/** Wait for `cond` (re-checked every 50 ms), failing with `what` after `ms`. */
export async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
