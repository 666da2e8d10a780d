import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeHome, type TestHome } from '../helpers/env.js';
import { prHarness } from './pr.helpers.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n[verify]\nauto_repair = 0\n');
});
afterEach(() => h.cleanup());

const { cli, task, events, runUntilIdle } = prHarness(() => h);

async function commentedTask(promptLog: string): Promise<string> {
  const r = await h.call('delegate_task', {
    objective: 'add app.js',
    workspace: h.repo,
    kind: 'execute',
    mode: 'auto_execute',
    verify: [['node', '-e', "process.exit(require('fs').readFileSync('app.js','utf8').includes('TODO') ? 1 : 0)"]],
    metadata: { mock: { prompt_log: promptLog, write_files: { 'app.js': 'const a = 1;\n// TODO\nmodule.exports = a;\n' }, when: [{ prompt_includes: 'drop the TODO', write_files: { 'app.js': 'const a = 1;\nmodule.exports = a;\n' } }] } },
  });
  await runUntilIdle();
  return r.task.id as string;
}

describe('review comments on the diff', () => {
  it('CLI: one review of two comments goes to the session as one follow-up turn, and the fix is verified again', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const id = await commentedTask(log);
    // The first attempt's verification caught the TODO; a person comments on the line instead of retrying.
    expect(task(id).status).toBe('failed');
    const r = await cli(['review', id.slice(0, 10), '--comment', 'app.js:2', 'drop the TODO, it is done', '--comment', 'app.js:1-3', 'keep the export', '--send', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const sent = JSON.parse(r.stdout);
    expect(sent.task).toMatchObject({ id, status: 'queued', attempt: 2 });
    expect(sent.comments).toHaveLength(2);
    expect(sent.comments[0]).toMatchObject({ file: 'app.js', line: 2, endLine: 2, quoted: ['// TODO'], text: 'drop the TODO, it is done', by: 'the CLI', sentAs: 2 });
    expect(sent.comments[1]).toMatchObject({ line: 1, endLine: 3, quoted: ['const a = 1;', '// TODO', 'module.exports = a;'], sentAs: 2 });
    await runUntilIdle();
    const after = task(id);
    expect(after.status, JSON.stringify(after.error)).toBe('completed');
    expect(readFileSync(join(after.worktreePath!, 'app.js'), 'utf8')).not.toContain('TODO');
    expect(events(id, 'verify.completed').filter((e) => e.payload.attempt === 2).map((e) => e.payload.ok)).toEqual([true]);
    // One turn carried the whole review: file, range, quoted lines, the comments.
    const prompts = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(prompts).toHaveLength(2);
    expect(prompts[1].resumed).toBe(true);
    expect(prompts[1].prompt).toContain('1. app.js line 2:\n   > // TODO\n   Comment: drop the TODO, it is done');
    expect(prompts[1].prompt).toContain('2. app.js lines 1-3:');
    expect(events(id, 'review.sent')).toHaveLength(1);
    const listed = await cli(['review', id]);
    expect(listed.stdout).toMatch(/app\.js:2 {2}sent as attempt 2 {2}drop the TODO/);
  }, 120_000);

  it('refuses a bad file or line range and a review with nothing to send, changing nothing', async () => {
    const id = await commentedTask(join(h.root, 'p.jsonl'));
    const bad = [
      [['--comment', 'nope.js:1', 'x', '--send'], /nope\.js is not a file in task/],
      [['--comment', 'app.js:9', 'x', '--send'], /app\.js has 3 lines; 9 is out of range/],
      [['--comment', '../escape:1', 'x'], /is not a path inside the task's worktree/],
      [['--comment', 'app.js', 'x'], /is not FILE:LINE or FILE:LINE-LINE/],
      [['--send'], /has no unsent review comments/],
    ] as const;
    for (const [args, msg] of bad) {
      const r = await cli(['review', id, ...args]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr).toMatch(msg);
    }
    expect(events(id, 'review.comment')).toHaveLength(0);
    expect(task(id).attempt).toBe(1);
    // Over MCP a review of an execute task waits for a person's approval, like any agent's follow-up.
    const mcp = await h.call('review_task', { id, comments: [{ file: 'app.js', line: 2, text: 'drop the TODO' }], send: true }, 'mcp');
    expect(mcp.task.status).toBe('awaiting_approval');
    expect(mcp.approval.waiting).toEqual([id]);
  }, 120_000);
});
