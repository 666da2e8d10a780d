import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pollPull } from '../../main/isolation/pull-watch.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { storedText } from '../helpers/store-dump.js';
import type { ScriptedForge } from '../fixtures/forge/scripted-forge.js';
import { forgeHome, gitOut, lintChecks, prHarness, TOKEN, TOKEN_ENV } from './pr.helpers.js';

let h: TestHome;
let forge: ScriptedForge | null = null;
let bare = '';
let id = '';
beforeEach(async () => {
  h = makeHome();
  const env = await forgeHome(h, 'github');
  forge = env.forge;
  bare = env.bare;
  forge.checksFor = lintChecks(bare);
  id = await todoTask('ci/lint');
}, 60_000);
afterEach(async () => {
  await forge?.close();
  forge = null;
  delete process.env[TOKEN_ENV];
  h.cleanup();
});

const { cli, pull, events, todoTask } = prHarness(() => h);
const remoteBranches = () => gitOut(h.root, '--git-dir', bare, 'for-each-ref', '--format=%(refname)', 'refs/heads');

/** A refusal changes nothing: no pull record, no pr.* event, no branch pushed. */
function expectNothingChanged(before: string) {
  expect(pull(id)).toBeNull();
  expect(events(id, 'pr.opened')).toHaveLength(0);
  expect(remoteBranches()).toBe(before);
}

describe('lightworker pr refusals name the fix and change nothing', () => {
  it('no remote', async () => {
    const before = remoteBranches();
    gitOut(h.repo, 'remote', 'remove', 'origin');
    const r = await cli(['pr', id]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/has no remote "origin": add one \(git remote add origin URL\)/);
    expectNothingChanged(before);
  });

  it('no credentials, and a token the forge refuses (401), never shown', async () => {
    const before = remoteBranches();
    const none = await cli(['pr', id], { [TOKEN_ENV]: '' });
    expect(none.stderr).toMatch(new RegExp(`no token for local: set ${TOKEN_ENV}`));
    const bad = await cli(['pr', id], { [TOKEN_ENV]: 'wrong-token-Zx81kQ' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(new RegExp(`refused the token from ${TOKEN_ENV} \\(401\\)`));
    expect(bad.stderr).not.toContain('wrong-token-Zx81kQ');
    expectNothingChanged(before);
  });

  it('404 (a repository the token cannot see), 422 (the forge refuses the request), rate limit with Retry-After', async () => {
    const before = remoteBranches();
    forge!.failNext(/^GET \/gh\/repos\/acme\/widgets$/, 404, {}, { message: 'Not Found' });
    const nf = await h.call('open_pull_request', { id }).catch((e) => e);
    expect(nf).toMatchObject({ code: 'not_found' });
    expect(nf.message).toMatch(/acme\/widgets or what was asked is not found .*\(404\).*check the remote URL/);
    forge!.failNext(/^GET \/gh\/repos\/acme\/widgets$/, 429, { 'Retry-After': '7' }, { message: 'API rate limit exceeded' });
    const rl = await h.call('open_pull_request', { id }).catch((e) => e);
    expect(rl).toMatchObject({ code: 'rate_limited', details: { retryAfterMs: 7000 } });
    expect(rl.message).toMatch(/rate limited \(429\); try again in 7 s/);
    expectNothingChanged(before);
    forge!.failNext(/^POST \/gh\/repos\/acme\/widgets\/pulls$/, 422, {}, { message: 'Validation Failed', errors: [{ message: 'base is invalid' }] });
    const v = await h.call('open_pull_request', { id, branch: 'try-422' }).catch((e) => e);
    expect(v).toMatchObject({ code: 'conflict' });
    expect(v.message).toMatch(/refused it \(422\): Validation Failed; base is invalid \(branch "try-422" was pushed; nothing changed locally\)/);
    expect(pull(id)).toBeNull();
  });

  it('a protected or base branch, a rejected push, an open PR for the branch, and an MCP client', async () => {
    const before = remoteBranches();
    expect(await h.call('open_pull_request', { id, branch: 'main' }).catch((e) => e.message)).toMatch(/"main" is the branch the pull request merges into/);
    forge!.protectedBranches.add('release');
    execFileSync('git', ['--git-dir', bare, 'update-ref', 'refs/heads/release', gitOut(h.repo, 'rev-parse', 'HEAD')]);
    expect(await h.call('open_pull_request', { id, branch: 'release' }).catch((e) => e.message)).toMatch(/branch "release" is protected on local/);
    // Someone else's work already on that branch: not a fast-forward, refused by git, nothing overwritten.
    const theirs = gitOut(h.repo, 'commit-tree', '-m', 'theirs', gitOut(h.repo, 'rev-parse', 'HEAD^{tree}'));
    execFileSync('git', ['--git-dir', bare, 'fetch', '-q', h.repo, `${theirs}:refs/heads/taken`]);
    const rej = await h.call('open_pull_request', { id, branch: 'taken' }).catch((e) => e);
    expect(rej).toMatchObject({ code: 'conflict' });
    expect(rej.message).toMatch(/the remote refused the push to taken: .*rejected.*choose another branch name/);
    expect(gitOut(h.root, '--git-dir', bare, 'rev-parse', 'taken')).toBe(theirs);
    const mcp = await h.call('open_pull_request', { id }, 'mcp').catch((e) => e);
    expect(mcp).toMatchObject({ code: 'forbidden' });
    expect(pull(id)).toBeNull();
    expect(remoteBranches()).not.toContain('lightworker/');
    void before;
    await h.call('open_pull_request', { id, branch: 'mine' });
    expect((await h.call('open_pull_request', { id, branch: 'mine' }).catch((e) => e.message)) as string).toMatch(/already has an open pull request: http:\/\/127\.0\.0\.1:\d+\/acme\/widgets\/pull\/1/);
  });

  it('the watcher waits what a rate limit says, records the error once, and keeps no token', async () => {
    await h.call('open_pull_request', { id });
    forge!.failNext(/^GET \/gh\/repos\/acme\/widgets\/pulls\/1$/, 403, { 'Retry-After': '30', 'x-ratelimit-remaining': '0' }, { message: 'API rate limit exceeded' });
    const t0 = Date.now();
    const after = await pollPull(h.engine, pull(id)!);
    expect(after.lastError).toMatch(/rate limited \(403\); try again in 30 s/);
    expect(after.nextPollAt).toBeGreaterThanOrEqual(t0 + 30_000);
    expect(events(id, 'pr.poll_failed')).toHaveLength(1);
    expect(h.engine.db.prepare("SELECT status FROM tasks WHERE id = ?").get(id)).toEqual({ status: 'completed' });
    expect(storedText(h)).not.toContain(TOKEN);
  });
});
