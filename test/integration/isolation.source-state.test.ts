import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fillScratchIndex } from '../../main/isolation/scratch-index.js';
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

  it('reuses one scratch index per concurrent call, each state still exact, and removes those of processes that are gone', async () => {
    h = makeHome();
    const repo = makeRepo(join(h.root, 'reuse'), { 'a.ts': 'export const a = 1;\n' });
    const head = git(repo, 'rev-parse', 'HEAD');
    const store = storeOf(h.engine, repo);
    const scratch = () => readdirSync(store).filter((n) => n.startsWith('index-')).sort();
    expect(await sourceStateCommit(h.engine, repo)).toBe(head);
    // An untracked file, then the file gone again: the reused index must carry nothing from the call before.
    writeFileSync(join(repo, 'b.ts'), 'export const b = 1;\n');
    const withB = await sourceStateCommit(h.engine, repo);
    expect(withB).not.toBe(head);
    expect(execFileSync('git', ['--git-dir', store, 'show', `${withB}:b.ts`], { encoding: 'utf8' })).toBe('export const b = 1;\n');
    rmSync(join(repo, 'b.ts'));
    expect(await sourceStateCommit(h.engine, repo)).toBe(head);
    const ours = scratch().filter((n) => n.startsWith(`index-${process.pid}-`));
    expect(ours).toHaveLength(1);
    // A process that died mid-call, before this one made more (killed: no exit handler) left its index; one of a live process stays.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const left = join(store, `index-${dead}-zzzzzz-1`);
    const live = join(store, `index-${process.ppid}-zzzzzz-1`);
    writeFileSync(left, 'stale');
    writeFileSync(live, 'in use');
    // Four at once take four; afterwards the same four serve again (no new file per call).
    writeFileSync(join(repo, 'b.ts'), 'export const b = 2;\n');
    const four = await Promise.all([1, 2, 3, 4].map(() => sourceStateCommit(h!.engine, repo)));
    expect(new Set(four).size).toBe(1);
    const after = scratch().filter((n) => n.startsWith(`index-${process.pid}-`));
    expect(after.length).toBeLessThanOrEqual(4);
    expect(existsSync(left)).toBe(false);
    expect(existsSync(live)).toBe(true);
    await Promise.all([1, 2, 3, 4].map(() => sourceStateCommit(h!.engine, repo)));
    expect(scratch().filter((n) => n.startsWith(`index-${process.pid}-`))).toEqual(after);
  });

  it('fills a reused scratch index with exactly the source\'s bytes and times, shorter or longer than before', () => {
    h = makeHome();
    const [big, small, index] = ['big', 'small', 'index'].map((n) => join(h!.root, n));
    writeFileSync(big, 'x'.repeat(5000));
    writeFileSync(small, 'DIRC small');
    utimesSync(small, new Date(1_600_000_000_000), new Date(1_600_000_000_000));
    fillScratchIndex(index, big);
    expect(readFileSync(index, 'utf8')).toBe('x'.repeat(5000));
    fillScratchIndex(index, small);
    expect(readFileSync(index, 'utf8')).toBe('DIRC small');
    expect(statSync(index).mtimeMs).toBe(1_600_000_000_000);
    fillScratchIndex(index, big);
    expect(readFileSync(index, 'utf8')).toBe('x'.repeat(5000));
  });
});
