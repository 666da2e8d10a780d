import { describe, expect, it } from 'vitest';
import { matchGlob, mayContainMatch } from '../../main/platform/git/globs.js';

describe('isolation globs (allowed_paths, setup copy)', () => {
  it.each([
    ['.env', '.env*', true],
    ['.env.local', '.env*', true],
    ['a/.env', '.env*', false],
    ['a/.env', '**/.env*', true],
    ['.env', '**/.env*', true],
    ['src/a/b.ts', 'src/**', true],
    ['src/a/b.ts', 'src/*.ts', false],
    ['src/b.ts', 'src/*.ts', true],
    ['src/a/b.ts', 'src', true],
    ['srcx/a', 'src', false],
    ['src/a/b.ts', './src/', true],
    ['config/x.json', 'config/*.{json,yml}', true],
    ['config/x.txt', 'config/*.{json,yml}', false],
    ['a/b/c/x.ts', '**/x.ts', true],
    ['ax.ts', '**/x.ts', false],
    ['docs/x/y/a.md', 'docs/**/*.md', true],
    ['docs/a.md', 'docs/**/*.md', true],
    ['file1.ts', 'file[0-9].ts', true],
    ['filea.ts', 'file[!a].ts', false],
    ['a+b(1).txt', 'a+b(1).txt', true],
  ])('%s ~ %s → %s', (path, glob, expected) => {
    expect(matchGlob(path, glob)).toBe(expected);
  });

  it('prunes folders no pattern can reach', () => {
    expect(mayContainMatch('node_modules', '.env*')).toBe(false);
    expect(mayContainMatch('config', 'config/*.json')).toBe(true);
    expect(mayContainMatch('config/sub', 'config/*.json')).toBe(false);
    expect(mayContainMatch('a/b', '**/.env')).toBe(true);
    expect(mayContainMatch('src/x', 'src')).toBe(true);
  });
});
