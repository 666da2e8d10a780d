import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scanFolder } from '../../main/isolation/copy.js';
import { tempDir } from '../helpers/env.js';

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

function folderWith(files: string[]): string {
  const t = tempDir();
  cleanup = t.cleanup;
  for (const f of files) {
    mkdirSync(join(t.dir, f, '..'), { recursive: true });
    writeFileSync(join(t.dir, f), `${f}\n`);
  }
  return t.dir;
}

const BUDGET = { max_bytes: 1_000_000, max_files: 100, ignore: ['node_modules', 'build', '*.log', 'docs/generated'] };

describe('scanFolder (copy isolation)', () => {
  it('skips ignored names at any depth and anchored paths, keeps look-alikes, and lists symlinks as links', () => {
    const dir = folderWith(['src/a.ts', 'src/build.ts', 'src/node_modules/x/index.js', 'node_modules/y.js', 'build/out.js', 'app/build/out.js', 'run.log', 'docs/generated/api.md', 'docs/guide.md', 'lib/generated/keep.md']);
    symlinkSync('src/a.ts', join(dir, 'link-to-a'));
    const got = scanFolder(dir, BUDGET);
    expect(got.map((e) => e.rel).sort()).toEqual(['docs/guide.md', 'lib/generated/keep.md', 'link-to-a', 'src/a.ts', 'src/build.ts']);
    expect(got.find((e) => e.rel === 'link-to-a')?.kind).toBe('link');
  });

  it('names the budget it is over (files, then bytes), counting only what would be copied', () => {
    const dir = folderWith(['a.txt', 'b.txt', 'c.txt', 'node_modules/big.js']);
    expect(() => scanFolder(dir, { ...BUDGET, max_files: 2 })).toThrow(/over the copy budget: more than 2 files \(isolation\.copy\.max_files = 2\)/);
    expect(scanFolder(dir, { ...BUDGET, max_files: 3 })).toHaveLength(3);
    expect(() => scanFolder(dir, { ...BUDGET, max_bytes: 8 })).toThrow(/isolation\.copy\.max_bytes = 8/);
  });
});
