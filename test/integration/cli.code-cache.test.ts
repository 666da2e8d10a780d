import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeRepo, tempDir } from '../helpers/env.js';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * bin/lightworker.js runs the CommonJS bundle (out/main/cli.cjs) with V8's code cache in out/v8-cache/
 * (CLI start-up time). The package is copied as an installed one (no sources, so no build check) into
 * a folder of its own, so its cache is this test's alone.
 */
function installCopy(dir: string): string {
  const pkg = join(dir, 'pkg');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  mkdirSync(join(pkg, 'out', 'main'), { recursive: true });
  copyFileSync(join(ROOT, 'bin', 'lightworker.js'), join(pkg, 'bin', 'lightworker.js'));
  copyFileSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  for (const f of ['cli.cjs', 'mock-agent.mjs']) copyFileSync(join(ROOT, 'out', 'main', f), join(pkg, 'out', 'main', f));
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir');
  return pkg;
}

function run(pkg: string, home: string, args: string[], nodeFlags: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [...nodeFlags, join(pkg, 'bin', 'lightworker.js'), ...args], { env: { ...process.env, LIGHTWORKER_HOME: home } }, (err, stdout, stderr) => {
      done({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('CLI code cache', () => {
  const t = tempDir('lw-code-cache-');
  afterAll(() => t.cleanup());
  const pkg = installCopy(t.dir);
  const home = join(t.dir, 'home');
  const cacheDir = join(pkg, 'out', 'v8-cache');
  const cacheFiles = () => readdirSync(cacheDir).filter((f) => f.endsWith('.bin'));

  it('writes a cache on the first run, reads it on the next, and replaces a damaged one, answering the same', async () => {
    const submit = await run(pkg, home, ['submit', '--json', '-k', 'explore', '-w', makeRepo(join(t.dir, 'repo')), 'look around']);
    expect(submit.code, submit.stderr).toBe(0);
    const id = (JSON.parse(submit.stdout) as { task: { id: string } }).task.id;
    const [file] = cacheFiles();
    expect(cacheFiles()).toHaveLength(1);
    const written = statSync(join(cacheDir, file)).mtimeMs;

    const first = await run(pkg, home, ['tasks', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as { tasks: { id: string }[] }).tasks.map((x) => x.id)).toEqual([id]);
    // Accepted, so not written again.
    expect(statSync(join(cacheDir, file)).mtimeMs).toBe(written);

    writeFileSync(join(cacheDir, file), 'not a V8 code cache');
    const again = await run(pkg, home, ['tasks', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(first.stdout);
    expect(cacheFiles()).toEqual([file]);
    expect(readFileSync(join(cacheDir, file), 'utf8')).not.toBe('not a V8 code cache');

    // Errors still name the field and exit 2 through the cached bundle.
    const bad = await run(pkg, home, ['show', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/id: .*\[invalid_input\]/);
  });

  it('keeps one cache per set of Node flags: a leader (LEADER_V8_FLAGS) and a plain call never rewrite each other', async () => {
    const plain = await run(pkg, home, ['tasks', '--json']);
    expect(plain.code, plain.stderr).toBe(0);
    const [plainFile] = cacheFiles();
    const plainWritten = statSync(join(cacheDir, plainFile)).mtimeMs;
    // V8 refuses a cache made under other flags: this run writes its own beside it.
    const flags = ['--max-semi-space-size=2'];
    expect((await run(pkg, home, ['tasks', '--json'], flags)).code).toBe(0);
    expect(cacheFiles()).toHaveLength(2);
    const flagged = cacheFiles().find((f) => f !== plainFile)!;
    const flaggedWritten = statSync(join(cacheDir, flagged)).mtimeMs;
    expect((await run(pkg, home, ['tasks', '--json'])).code).toBe(0);
    expect((await run(pkg, home, ['tasks', '--json'], flags)).code).toBe(0);
    // Both accepted: neither was written again.
    expect(statSync(join(cacheDir, plainFile)).mtimeMs).toBe(plainWritten);
    expect(statSync(join(cacheDir, flagged)).mtimeMs).toBe(flaggedWritten);
  });
});
