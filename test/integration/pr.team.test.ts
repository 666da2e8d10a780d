import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import type { ScriptedForge } from '../fixtures/forge/scripted-forge.js';
import { forgeHome, gitOut, prHarness, TOKEN_ENV } from './pr.helpers.js';

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

const { cli, task, runUntilIdle } = prHarness(() => h);

describe('team accept --pr', () => {
  it("opens one pull request for the team's result (the reviewed change), and none before the team passed", async () => {
    const env = await forgeHome(h, 'github');
    forge = env.forge;
    const script = join(h.root, 'reviewer.mjs');
    writeFileSync(script, "console.log(JSON.stringify({ summary: 'good', verdict: 'approve', issues: [] }));\n");
    const link = await cli(['workers', 'link', 'reviewer', '--command-json', JSON.stringify([process.execPath, script, '{prompt}'])]);
    expect(link.code, link.stderr).toBe(0);
    const mock = { write_files: { 'greet.txt': 'hello\n' } };
    const started = await cli(['team', 'implement_review', '--workers', 'mock,reviewer', '--rounds', '1', '--verify', 'test -s greet.txt', '--metadata', JSON.stringify({ mock }), '--workspace', h.repo, '--mode', 'auto_execute', '--json', 'write a greeting to greet.txt']);
    expect(started.code, started.stderr).toBe(0);
    const rootId = JSON.parse(started.stdout).rootId as string;
    const early = await cli(['team', 'accept', rootId, '--pr']);
    expect(early.stderr).toMatch(/has no result to open a pull request for/);
    expect(forge.pulls).toHaveLength(0);
    await runUntilIdle();
    const r = await cli(['team', 'accept', rootId, '--pr', '--branch', 'team/greeting', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const pull = JSON.parse(r.stdout).pull;
    const impl = task(pull.taskId);
    expect(impl.kind).toBe('execute');
    expect(forge.pulls).toMatchObject([{ number: 1, head: 'team/greeting', draft: true }]);
    expect(forge.headOf('team/greeting')).toBe(gitOut(impl.worktreePath!, 'rev-parse', 'HEAD'));
    // Nothing reached the user's branch: a pull request instead of a local accept.
    expect(gitOut(h.repo, 'ls-files')).not.toContain('greet.txt');
  }, 120_000);
});
