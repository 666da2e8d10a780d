import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';

/** `show` reads as a review: verification per command with exit code, duration and output. */
let t: ReturnType<typeof tempDir>;
let home: string;
let repo: string;

beforeAll(() => {
  t = tempDir('lw-show-');
  home = join(t.dir, 'home');
  withTestStore(home);
  repo = makeRepo(join(t.dir, 'repo'));
});
afterAll(() => t.cleanup());

describe('show', () => {
  it('prints each verify command with its exit code, duration and output tail as plain lines', async () => {
    const sub = await runCli(
      [
        'submit', '-w', repo, '--kind', 'execute', '--mode', 'auto_execute', '--json',
        '--metadata', JSON.stringify({ mock: { write_files: { 'a.txt': 'a\n' } } }),
        '--verify', '["sh","-c","echo first line; echo second line"]',
        '--verify', 'echo out; echo oops >&2; exit 3',
        'write a file',
      ],
      { home },
    );
    expect(sub.code, sub.stderr).toBe(0);
    const id = JSON.parse(sub.stdout).task.id as string;
    expect((await runCli(['run', '--until-idle', '--quiet'], { home })).code).toBe(0);
    const show = await runCli(['show', id], { home });
    expect(show.code, show.stderr).toBe(0);
    const text = show.stdout;
    expect(text).toMatch(/verification \(attempt 1\): FAILED/);
    expect(text).toContain('✓ $ sh -c "echo first line; echo second line"');
    expect(text).toMatch(/\n {4}exit 0 · \d+ ms\n {4}│ first line\n {4}│ second line\n/); // a passing command's output too
    expect(text).toContain('✗ $ echo out; echo oops >&2; exit 3');
    expect(text).toMatch(/\n {4}exit 3 · \d+ ms\n/);
    expect(text).toContain('│ oops');
    expect(text).not.toContain('\\n'); // no JSON-escaped output
    // The event log names the command and its outcome instead of a JSON payload.
    const events = await runCli(['events', '--task', id], { home });
    expect(events.stdout).toMatch(/verify\.command\s+\$ echo out; echo oops >&2; exit 3 → exit 3 in \d+ ms/);
  }, 60_000);

  it('errors speak in the CLI’s words, never an internal command name', async () => {
    const sub = await runCli(['submit', '-w', repo, '--kind', 'explore', '--json', 'x'], { home });
    const id = JSON.parse(sub.stdout).task.id as string;
    await runCli(['cancel', id], { home });
    const deep = await runCli(['retry', id], { home, env: { LIGHTWORKER_DEPTH: '5' } });
    expect(deep.code).toBe(1);
    expect(deep.stderr).toMatch(/^error: delegation depth exceeded \[forbidden\]/);
    expect(deep.stderr).not.toContain('retry_task');
  });
});
