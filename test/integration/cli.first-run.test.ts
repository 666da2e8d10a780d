import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** What a new user meets in their first minutes with the CLI: typos, where a task works, a Node upgrade. */
describe('the CLI on a first run', () => {
  let dir: string;
  let cleanup: () => void;
  let home: string;
  let repo: string;
  const tasks = async () => JSON.parse((await runCli(['tasks', '--json', '--limit', '1000'], { home })).stdout).tasks as { id: string }[];

  beforeAll(() => {
    ({ dir, cleanup } = tempDir('lw-first-run-'));
    home = join(dir, 'home');
    repo = makeRepo(join(dir, 'repo'));
  });
  afterAll(() => cleanup?.());

  it('a mistyped command gets the "did you mean" line and the usage line, not the whole help', async () => {
    const r = await runCli(['taks'], { home });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'taks'");
    expect(r.stderr).toContain('(Did you mean tasks?)');
    expect(r.stderr).toMatch(/^Usage: lightworker \[options\] \[command\]/m);
    expect(r.stderr).not.toContain('Commands:');
    expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(4);
    // A subcommand's own mistake still shows that subcommand's usage.
    const show = await runCli(['show'], { home });
    expect(show.code).toBe(2);
    expect(show.stderr).toContain("missing required argument 'id'");
    expect(show.stderr).toContain('Usage: lightworker show');
  });

  it('a submit from a subfolder names the repository root it used; --subfolder keeps the change inside the subfolder', async () => {
    const sub = join(repo, 'pkg', 'lib');
    mkdirSync(sub, { recursive: true });
    const r = await runCli(['submit', '--worker', 'mock', '-k', 'explore', '--json', 'look around'], { home, cwd: sub });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`workspace: the repository root ${repo} (you are in pkg/lib/; --subfolder keeps the change inside it)`);
    expect(JSON.parse(r.stdout).task.workspace).toBe(repo);

    const kept = await runCli(['submit', '--worker', 'mock', '-k', 'execute', '--subfolder', '--json', 'change it'], { home, cwd: sub });
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stderr).toContain('changes kept to pkg/lib/ (allowed path pkg/lib/**)');
    expect(JSON.parse(kept.stdout).task).toMatchObject({ workspace: repo, allowedPaths: ['pkg/lib/**'] });

    const before = (await tasks()).length;
    const both = await runCli(['submit', '--worker', 'mock', '--subfolder', '--allowed-path', 'x/**', 'y'], { home, cwd: sub });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--subfolder: give it or --allowed-path, not both');
    expect((await tasks()).length).toBe(before);
  });

  it('a submit of a folder that is not a repository says it will be copied, and how big the copy is', async () => {
    const plain = join(dir, 'plain');
    mkdirSync(join(plain, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(join(plain, 'a.txt'), 'x'.repeat(3000));
    writeFileSync(join(plain, 'b.txt'), 'y'.repeat(2000));
    writeFileSync(join(plain, 'node_modules', 'dep', 'big.js'), 'z'.repeat(100_000));
    const r = await runCli(['submit', '--worker', 'mock', '-k', 'explore', 'look'], { home, cwd: plain });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`workspace: ${plain} is not a git repository: the task works on a private copy \\(2 files, 5 KiB; ignored: node_modules,`));
    const refused = await runCli(['submit', '--worker', 'mock', '--subfolder', 'look'], { home, cwd: plain });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is not inside a git repository');
  });

  /**
   * After a Node upgrade in an existing checkout the installed better-sqlite3 addon no longer fits: run the
   * CLI on a Node of another ABI (under `scripts/test-node.js` the system Node; on the system Node the
   * Node that script fetched into .lightworker-dev/).
   */
  it('on a Node the installed better-sqlite3 was not built for, every command says so in one line with the fix, and doctor reports it', async (ctx) => {
    const fetched = existsSync(join(ROOT, '.lightworker-dev'))
      ? readdirSync(join(ROOT, '.lightworker-dev'))
          .filter((d) => /^node-\d+$/.test(d) && d !== `node-${process.versions.node.split('.')[0]}`)
          .map((d) => join(ROOT, '.lightworker-dev', d, 'package', 'bin', 'node'))
          .find((f) => existsSync(f))
      : undefined;
    const other = process.env.LIGHTWORKER_TEST_OTHER_NODE || fetched;
    if (!other) {
      const why = 'no Node of another major here: `node scripts/test-node.js 24 --prepare` fetches one (.ci/run does, before this suite)';
      if (process.env.CI) throw new Error(why);
      ctx.skip(why);
      return;
    }
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
        execFile(other, [BIN, ...args], { env: { ...process.env, LIGHTWORKER_HOME: join(dir, 'abi-home') }, timeout: 60_000 }, (err, stdout, stderr) =>
          done({ code: err ? Number((err as { code?: unknown }).code) || 1 : 0, stdout, stderr }),
        ),
      );
    const list = await cli(['tasks']);
    expect(list.code).toBe(1);
    expect(list.stderr.trim().split('\n')).toHaveLength(1);
    expect(list.stderr).toMatch(/better-sqlite3 was built for another Node\.js \(ABI \d+; this Node v\d+\.\d+\.\d+ needs \d+\): after a Node upgrade run `npm rebuild better-sqlite3`/);
    expect(list.stderr).not.toMatch(/at .*\.js:\d+/);
    const doctor = await cli(['doctor', '--json']);
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as { ok: boolean; checks: { name: string; ok: boolean; detail: string; fix?: string }[] };
    expect(report.ok).toBe(false);
    expect(report.checks).toContainEqual(expect.objectContaining({ name: 'database', ok: false, fix: 'npm rebuild better-sqlite3' }));
  });
});
