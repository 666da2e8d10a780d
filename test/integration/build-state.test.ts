import { execFile } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtAtAGlance } from '../../scripts/build-sources.js';
import { buildState } from '../../scripts/build-state.js';
import { tempDir } from '../helpers/env.js';

/**
 * A checkout never runs a stale bundle: `lightworker` in a copy of this checkout (sources, configs, bin,
 * scripts; node_modules linked) builds when there is no build, notices a changed source by its hash,
 * rebuilds once however many processes start at the same time, and keeps the previous build's chunks for
 * processes still running them.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);

let t: ReturnType<typeof tempDir>;
let copy: string;
beforeAll(() => {
  t = tempDir('lw-build-');
  copy = join(t.dir, 'checkout');
  for (const f of ['main', 'preload', 'renderer', 'bin', 'scripts', 'electron.vite.config.ts', 'tsconfig.json', 'tsconfig.lib.json', 'package.json']) {
    cpSync(join(ROOT, f), join(copy, f), { recursive: true, filter: (p) => !/[/\\](dist|\.vite|node_modules)$/.test(p) });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
});
afterAll(() => t.cleanup());

async function lightworker(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LIGHTWORKER_HOME: join(t.dir, 'home') };
  delete env.LIGHTWORKER_NO_BUILD_CHECK; // set by the test setup for the suite's own CLI runs
  return exec(process.execPath, [join(copy, 'bin', 'lightworker.js'), ...args], { env, timeout: 300_000 });
}

const mainFiles = () => readdirSync(join(copy, 'out', 'main'));

// A whole build of the copy (tsc and the bundles) takes 20 s here when quiet and past a minute under load.
describe('a checkout never runs a stale build', { timeout: 300_000 }, () => {
  it('builds when nothing is built, then runs', async () => {
    expect(buildState(copy)).toMatchObject({ current: false });
    const r = await lightworker(['tasks', '--json']);
    expect(r.stderr).toMatch(/never built.*building/);
    expect(JSON.parse(r.stdout)).toMatchObject({ tasks: [], has_more: false });
    expect(buildState(copy)).toMatchObject({ current: true, reason: 'fingerprint matches' });
    // What every start checks first: one stat walk against the listing the build recorded.
    expect(builtAtAGlance(copy)).toBe(true);
    // A stamp written before the listing was kept beside it: the full check adds the listing.
    rmSync(join(copy, 'out', 'build-stamp.list'));
    expect(builtAtAGlance(copy)).toBe(false);
    expect(buildState(copy)).toMatchObject({ current: true, reason: 'fingerprint matches' });
    expect(builtAtAGlance(copy)).toBe(true);
  });

  it('a touched but unchanged source is still current (content hash); no rebuild', async () => {
    const file = join(copy, 'main', 'cli', 'tasks.ts');
    const later = new Date(Date.now() + 5000);
    utimesSync(file, later, later);
    // The glance cannot tell a touch from an edit: it defers to the content hash, which then records the new listing.
    expect(builtAtAGlance(copy)).toBe(false);
    expect(buildState(copy)).toMatchObject({ current: true, reason: 'content hash matches' });
    expect(builtAtAGlance(copy)).toBe(true);
    const r = await lightworker(['tasks', '--json']);
    expect(r.stderr).not.toMatch(/building/);
  });

  it('a changed source is rebuilt once for processes starting together, and the new code runs', async () => {
    const before = mainFiles();
    // Stands for a chunk of the previous build that a running process may still import lazily.
    writeFileSync(join(copy, 'out', 'main', 'previous-chunk-x1.js'), 'export {};\n');
    const file = join(copy, 'main', 'cli', 'tasks.ts');
    const source = readFileSync(file, 'utf8');
    expect(source).toContain('queue a task (or a batch with --batch FILE)');
    writeFileSync(file, source.replace('queue a task (or a batch with --batch FILE)', 'queue a task, freshly built'));
    expect(buildState(copy)).toMatchObject({ current: false, reason: 'sources changed since the last build' });
    expect(builtAtAGlance(copy)).toBe(false);

    const runs = await Promise.all([1, 2, 3].map(() => lightworker(['--help'])));
    for (const r of runs) expect(r.stdout).toContain('queue a task, freshly built');
    const stderr = runs.map((r) => r.stderr).join('\n');
    expect(stderr.match(/sources changed since the last build: building/g)).toHaveLength(1);
    expect(buildState(copy).current).toBe(true);
    // The previous build's files are still there for processes that run it.
    for (const f of [...before, 'previous-chunk-x1.js']) expect(existsSync(join(copy, 'out', 'main', f))).toBe(true);
  });

  it('prepare (what npm install and npm pack run) rebuilds such a build clean, so a tarball holds one build', async () => {
    expect(buildState(copy)).toMatchObject({ current: true, keptOld: true });
    const r = await exec(process.execPath, [join(copy, 'scripts', 'build.js'), '--if-stale'], { timeout: 300_000 });
    expect(r.stderr).toMatch(/earlier builds: building/);
    expect(existsSync(join(copy, 'out', 'main', 'previous-chunk-x1.js'))).toBe(false);
    expect(buildState(copy)).toMatchObject({ current: true, keptOld: false });
    const again = await exec(process.execPath, [join(copy, 'scripts', 'build.js'), '--if-stale'], { timeout: 300_000 });
    expect(again.stderr).toMatch(/the build is current/);
  });
});
