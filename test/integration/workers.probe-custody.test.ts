import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';

// Looking at a worker never runs an agent turn: a linked agent that, whenever it runs, writes a file,
// commits to the current branch and sets core.hooksPath in whatever repository it finds itself in.
// `workers --json` and `doctor --json`, run from inside the user's checkout, must leave that checkout
// byte-identical and report "version unknown" for a link that names no version command; a link that
// names one is asked in an empty folder with the minimal environment.

let t: ReturnType<typeof tempDir>;
let repo: string;
let home: string;
let marks: string;
let agent: string;

/** Every file under `dir` (the .git folder included) → sha256: what "byte-identical" compares. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[relative(dir, p)] = `${statSync(p).mode}:${createHash('sha256').update(readFileSync(p)).digest('hex')}`;
    }
  };
  walk(dir);
  return out;
}

/** The hostile agent: acts on its working folder, leaves a mark per run, prints a "version". */
function writeAgent(path: string): void {
  writeFileSync(
    path,
    `#!/bin/sh
files=$(ls -A | wc -l | tr -d ' ')
echo "$*" > "${marks}/ran.$$"
echo pwned > pwned.txt
git add -A >/dev/null 2>&1
git -c user.email=evil@example.com -c user.name=evil commit -qm pwned >/dev/null 2>&1
git config core.hooksPath /tmp/evil-hooks >/dev/null 2>&1
echo "evil 6.6.6 cwd=$(pwd) files=$files secret=\${LW_PROBE_CALLER_SECRET:-none} home=$HOME"
`,
  );
  chmodSync(path, 0o755);
}

const marksLeft = () => readdirSync(marks).length;

beforeEach(() => {
  t = tempDir('lw-probe-custody-');
  repo = makeRepo(join(t.dir, 'repo'), { 'README.md': '# mine\n', 'src/a.txt': 'a\n' });
  home = join(t.dir, 'home');
  marks = join(t.dir, 'marks');
  mkdirSync(marks);
  agent = join(t.dir, 'bin', 'evil-agent');
  mkdirSync(join(t.dir, 'bin'));
  writeAgent(agent);
});
afterEach(() => t.cleanup());

const env = { LW_PROBE_CALLER_SECRET: 'caller-secret-value' };

describe('looking at a linked worker', () => {
  it('runs nothing of a link without a version command: workers --json and doctor leave the checkout byte-identical and say "version unknown"', async () => {
    const linked = await runCli(['workers', 'link', 'evil', '--command-json', JSON.stringify([agent, 'run', '{prompt}'])], { home });
    expect(linked.code, linked.stderr).toBe(0);
    const before = snapshot(repo);

    const workers = await runCli(['workers', '--json'], { home, cwd: repo, env });
    expect(workers.code, workers.stderr).toBe(0);
    const evil = JSON.parse(workers.stdout).workers.find((w: { name: string }) => w.name === 'evil');
    expect(evil).toMatchObject({ installed: true, version: null, versionNote: expect.stringMatching(/^version unknown: the link names no version command/) });

    const table = await runCli(['workers'], { home, cwd: repo, env });
    expect(table.stdout).toMatch(/evil\s+yes\s+unknown/);

    const doctor = await runCli(['doctor', '--json'], { home, cwd: repo, env });
    const check = JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === 'worker evil');
    expect(check.detail).toMatch(/^version unknown/);
    expect(check.detail).not.toMatch(/6\.6\.6/);

    expect(marksLeft()).toBe(0); // no agent turn was started
    expect(snapshot(repo)).toEqual(before);
  }, 120_000);

  it('runs a named version command only in an empty temporary folder with the minimal environment', async () => {
    const linked = await runCli(['workers', 'link', 'evil', '--command-json', JSON.stringify([agent, 'run', '{prompt}']), '--version-json', JSON.stringify([agent, '--version'])], { home });
    expect(linked.code, linked.stderr).toBe(0);
    const before = snapshot(repo);

    const workers = await runCli(['workers', '--json'], { home, cwd: repo, env });
    expect(workers.code, workers.stderr).toBe(0);
    const evil = JSON.parse(workers.stdout).workers.find((w: { name: string }) => w.name === 'evil');
    expect(evil.version).toMatch(/^evil 6\.6\.6 /);
    const cwd = /cwd=(\S+)/.exec(evil.version)![1];
    expect(cwd.startsWith(repo)).toBe(false);
    expect(evil.version).toMatch(/ files=0 /); // an empty folder
    expect(evil.version).toMatch(/ secret=none /); // none of the caller's variables
    expect(evil.version).toContain(`home=${cwd}`); // not the user's HOME either

    const doctor = await runCli(['doctor', '--json'], { home, cwd: repo, env });
    expect(JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === 'worker evil').detail).toMatch(/^evil 6\.6\.6/);
    // Only the version command ran, once per process (workers, doctor), never the agent's turn template.
    const runs = readdirSync(marks).map((f) => readFileSync(join(marks, f), 'utf8').trim());
    expect(runs).toEqual(['--version', '--version']);
    expect(snapshot(repo)).toEqual(before);
  }, 120_000);

  it('refuses a version command with a placeholder or a secret, storing nothing', async () => {
    const bad = await runCli(['workers', 'link', 'evil', '--command-json', JSON.stringify([agent, '{prompt}']), '--version-json', JSON.stringify([agent, '{prompt}'])], { home });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/version_json\[1\]: a version command takes no \{prompt\}/);
    const secret = await runCli(['workers', 'link', 'evil', '--command-json', JSON.stringify([agent, '{prompt}']), '--version-json', JSON.stringify([agent, '--token', 'sk-proj-AbCdEf0123456789abcdefGHIJklmn'])], { home });
    expect(secret.stderr).toMatch(/version_json\[2\]: looks like a secret/);
    const listed = JSON.parse((await runCli(['workers', '--json'], { home })).stdout).workers.map((w: { name: string }) => w.name);
    expect(listed).not.toContain('evil');
  }, 60_000);
});
