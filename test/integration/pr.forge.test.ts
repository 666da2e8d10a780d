import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pollPull } from '../../main/isolation/pull-watch.js';
import { getPull } from '../../main/store/pulls.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { storedText } from '../helpers/store-dump.js';
import { startCli } from '../helpers/cli.js';
import type { ScriptedForge } from '../fixtures/forge/scripted-forge.js';
import { forgeHome, gitOut, lintChecks, prHarness, TOKEN, TOKEN_ENV, until } from './pr.helpers.js';

let h: TestHome;
let forge: ScriptedForge | null = null;
beforeEach(() => {
  h = makeHome();
});
afterEach(async () => {
  await forge?.close();
  forge = null;
  delete process.env[TOKEN_ENV];
  h.cleanup();
});

const { cli, task, pull, events, runUntilIdle, todoTask } = prHarness(() => h);

describe('lightworker pr: the whole loop under a running leader (GitHub API)', () => {
  it('pushes, opens a draft PR, sends the failing check back, pushes the fix, sees it pass and the merge', async () => {
    const env = await forgeHome(h, 'github');
    forge = env.forge;
    forge.checksFor = lintChecks(env.bare);
    const id = await todoTask('ci/lint');
    const head1 = gitOut(task(id).worktreePath!, 'rev-parse', 'HEAD');

    const opened = await cli(['pr', id.slice(0, 10), '--json']);
    expect(opened.code, opened.stderr).toBe(0);
    const shown = JSON.parse(opened.stdout).pull;
    expect(shown).toMatchObject({ number: 1, state: 'open', draft: true, forge: 'local', base: 'main' });
    expect(shown.branch).toMatch(/^lightworker\/add-app-[0-9a-z]{8}$/);
    // What was pushed is the verified commit, on the remote under that name; the token went in a header only.
    expect(forge.headOf(shown.branch)).toBe(head1);
    const pr = forge.pulls[0];
    expect(pr).toMatchObject({ head: shown.branch, base: 'main', draft: true, title: 'Add app' });
    expect(pr.body).toContain('## Objective\n\nadd app.js');
    expect(pr.body).toMatch(/\| `node -e process\.exit\(0\)` \| passed \|/);
    expect(pr.body).toContain('## Cost');
    expect(forge.requests.every((r) => r.auth === `Bearer ${TOKEN}` && !r.path.includes(TOKEN))).toBe(true);

    // The leader watches: the failing check goes to the task's session, the fix is verified and pushed.
    const leader = startCli(['run'], { home: h.home, env: { [TOKEN_ENV]: TOKEN } });
    try {
      await until('the fix pushed', () => events(id, 'pr.pushed').length === 1);
      const fixed = task(id);
      expect(fixed.attempt).toBe(2);
      expect(readFileSync(join(fixed.worktreePath!, 'app.js'), 'utf8')).toBe('done\n');
      const asked = events(id, 'pr.fix_requested');
      expect(asked).toHaveLength(1);
      expect(asked[0].payload).toMatchObject({ number: 1, round: 1, max: 2, failing: ['ci/lint'] });
      const resumed = events(id, 'task.resumed').at(-1)!;
      expect(resumed.payload).toMatchObject({ followUp: true });
      const head2 = gitOut(fixed.worktreePath!, 'rev-parse', 'HEAD');
      expect(head2).not.toBe(head1);
      expect(forge.headOf(shown.branch)).toBe(head2);
      expect(events(id, 'verify.completed').filter((e) => e.payload.attempt === 2 && e.payload.ok === true)).toHaveLength(1);
      await until('checks passing', () => getPull(h.engine.db, id)?.checks === 'passing');

      forge.merge(1);
      await until('the merge seen', () => getPull(h.engine.db, id)?.state === 'merged');
      expect(events(id, 'pr.merged')).toHaveLength(1);
      expect(gitOut(h.root, '--git-dir', env.bare, 'rev-parse', 'main')).toBe(head2);
    } finally {
      leader.kill('SIGTERM');
      await new Promise((r) => leader.once('exit', r));
    }
    const got = await h.call('get_task', { id });
    expect(got.pull).toMatchObject({ state: 'merged', checks: 'passing', fixRounds: 1, fixing: false });
    // LightWorker never merged: the only merge is the forge's own; no call of ours asked for one.
    expect(forge.requests.some((r) => /merge/.test(r.path) && r.method !== 'GET')).toBe(false);
    expect(storedText(h)).not.toContain(TOKEN);
  }, 180_000);
});

describe.each(['gitlab', 'gitea'] as const)('lightworker pr on %s', (kind) => {
  it('opens the request in its shape, sends the failing job back, pushes the fix and sees the merge', async () => {
    const env = await forgeHome(h, kind);
    forge = env.forge;
    forge.checksFor = lintChecks(env.bare);
    const id = await todoTask('ci/lint');
    const r = await h.call('open_pull_request', { id, branch: 'feature/app' });
    expect(r.pull).toMatchObject({ number: 1, branch: 'feature/app', draft: true });
    expect(forge.pulls[0].title).toMatch(kind === 'gitlab' ? /^Draft: Add app$/ : /^WIP: Add app$/);
    expect(forge.headOf('feature/app')).toBe(gitOut(task(id).worktreePath!, 'rev-parse', 'HEAD'));

    await pollPull(h.engine, getPull(h.engine.db, id)!);
    expect(task(id).status).toBe('queued');
    expect(pull(id)).toMatchObject({ checks: 'failing', fixing: true, fixRounds: 1 });
    await runUntilIdle();
    expect(task(id).status).toBe('completed');
    await pollPull(h.engine, pull(id)!);
    expect(events(id, 'pr.pushed')).toHaveLength(1);
    expect(forge.headOf('feature/app')).toBe(gitOut(task(id).worktreePath!, 'rev-parse', 'HEAD'));
    await pollPull(h.engine, pull(id)!);
    expect(pull(id)!.checks).toBe('passing');
    forge.merge(1);
    await pollPull(h.engine, pull(id)!);
    expect(pull(id)!.state).toBe('merged');
    const auth = kind === 'gitlab' ? TOKEN : `token ${TOKEN}`;
    expect(forge.requests.every((q) => q.auth === auth)).toBe(true);
  }, 120_000);
});

describe('review comments from the watcher and the fix budget', () => {
  it('sends new review comments once, and stops at [pr] max_fix_rounds', async () => {
    const env = await forgeHome(h, 'github', 'max_fix_rounds = 1');
    forge = env.forge;
    forge.checksFor = () => [{ name: 'ci/test', state: 'success', log: '' }];
    const id = await todoTask('rename the TODO');
    await h.call('open_pull_request', { id });
    forge.comments.push({ id: 501, author: 'carol', body: 'please rename the TODO', path: 'app.js', line: 1, review: 'CHANGES_REQUESTED' });
    await pollPull(h.engine, pull(id)!);
    expect(pull(id)).toMatchObject({ review: 'changes_requested', fixing: true, fixRounds: 1 });
    expect(events(id, 'pr.fix_requested')[0].payload.comments).toEqual([{ author: 'carol', path: 'app.js', line: 1, body: 'please rename the TODO' }]);
    await runUntilIdle();
    await pollPull(h.engine, pull(id)!);
    expect(events(id, 'pr.pushed')).toHaveLength(1);
    // A second comment is past the budget: recorded, never sent.
    forge.comments.push({ id: 502, author: 'carol', body: 'and another thing', path: null, line: null, review: 'COMMENTED' });
    await pollPull(h.engine, pull(id)!);
    expect(task(id).status).toBe('completed');
    expect(events(id, 'pr.fix_limit')).toHaveLength(1);
    await pollPull(h.engine, pull(id)!);
    expect(events(id, 'pr.fix_limit')).toHaveLength(1);
  }, 120_000);
});
