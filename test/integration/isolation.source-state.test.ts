import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sourceStateCommit, storeOf } from '../../main/isolation/snapshot.js';
import { makeHome, makeRepo, type TestHome } from '../helpers/env.js';

/**
 * The state a read-only snapshot holds is the checkout as it is now. Git trusts a file's stat data
 * (size, mtime, ctime) against the index unless the file is not older than the index ("racily clean"):
 * a file rewritten at the same size within the second of the last `git add` must still be seen as changed.
 */
let h: TestHome | null = null;
afterEach(() => {
  h?.cleanup();
  h = null;
});

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the source state of a checkout', () => {
  it('sees a same-size rewrite made within the second of the last commit', async () => {
    h = makeHome();
    // Start at the beginning of a second, so the commit and the rewrite share it.
    await sleep(1000 - (Date.now() % 1000) + 20);
    const repo = makeRepo(join(h.root, 'racy'), { 'a.ts': 'export const a = 1;\n' });
    writeFileSync(join(repo, 'a.ts'), 'export const a = 2;\n');
    // Whatever reads the index later does so in a later second.
    await sleep(1100);
    const state = await sourceStateCommit(h.engine, repo);
    expect(state).not.toBe(git(repo, 'rev-parse', 'HEAD'));
    const inState = execFileSync('git', ['--git-dir', storeOf(h.engine, repo), 'show', `${state}:a.ts`], { encoding: 'utf8' });
    expect(inState).toBe('export const a = 2;\n');
  });
});
