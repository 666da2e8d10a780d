import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { git } from './isolation.helpers.js';

/**
 * Boundary checks through the real CLI and runner with several tasks in one repository: retries (whose
 * branch renames rewrite .git/config), auto-repairs, accepts during runs, and one read-only worker that
 * really writes into the source checkout.
 */

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

interface Ctx {
  dir: string;
  home: string;
  repo: string;
  cli: (...args: string[]) => ReturnType<typeof runCli>;
}

function setup(config: string): Ctx {
  const t = tempDir();
  cleanup = t.cleanup;
  const home = join(t.dir, 'home');
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'config.toml'), config);
  const repo = makeRepo(join(t.dir, 'repo'));
  return { dir: t.dir, home, repo, cli: (...args: string[]) => runCli(args, { home, cwd: repo, timeoutMs: 180_000 }) };
}

/** A verify command that fails its first `fails` runs (counted in `counter`), then passes. */
function failingFirst(counter: string, fails: number): string {
  const script = `const fs=require('fs');const f=process.argv[1];const n=(fs.existsSync(f)?+fs.readFileSync(f,'utf8'):0)+1;fs.writeFileSync(f,String(n));process.exit(n>${fails}?0:1)`;
  return JSON.stringify([process.execPath, '-e', script, counter]);
}

async function submit(c: Ctx, name: string, kind: string, extra: string[]): Promise<string> {
  const r = await c.cli('submit', name, '--kind', kind, ...extra, '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).task.id as string;
}

async function show(c: Ctx, id: string): Promise<any> {
  const r = await c.cli('show', id, '--json');
  const j = JSON.parse(r.stdout);
  return j.task ?? j;
}

async function inspections(c: Ctx, id: string): Promise<Record<string, unknown>[]> {
  const r = await c.cli('events', '--task', id, '--json');
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === 'changes.inspected')
    .map((e) => e.payload);
}

const mock = (spec: Record<string, unknown>) => JSON.stringify({ mock: spec });

describe('boundary checks with retries and concurrent tasks (real runner)', () => {
  it('a retry of an execute task that already committed completes with its own commit', async () => {
    const c = setup('[verify]\nauto_repair = 0\n');
    const id = await submit(c, 'add a file', 'execute', [
      '--mode', 'auto_execute', '--worker', 'mock',
      '--metadata', mock({ write_files: { 'a.txt': 'from the worker\n' } }),
      '--verify', failingFirst(join(c.dir, 'count'), 1),
    ]);
    expect((await c.cli('run', '--until-idle', '--timeout', '120')).code).toBe(0);
    const first = await show(c, id);
    expect(first.status).toBe('failed');
    expect(first.error.code).toBe('verification_failed');
    const committed = git(c.repo, 'rev-parse', `lightworker/${id}`);

    const retry = await c.cli('retry', id, '--strategy', 'same');
    expect(retry.code, retry.stderr).toBe(0);
    expect((await c.cli('run', '--until-idle', '--timeout', '120')).code).toBe(0);
    const second = await show(c, id);
    expect(second.error?.message ?? null, 'attempt 2 must not fail').toBeNull();
    expect(second.status).toBe('completed');
    expect(second.attempt).toBe(2);
    // Attempt 2 made its own commit on the task branch; attempt 1's commit is kept on a side branch.
    expect(git(c.repo, 'log', '-1', '--format=%s', `lightworker/${id}`)).toContain('attempt 2');
    const kept = git(c.repo, 'branch', '--list', `lightworker/${id}-attempt-1-*`, '--format=%(objectname)');
    expect(kept).toBe(committed);
  }, 240_000);

  it('several execute and read-only tasks, retried and repaired, blame only the read-only worker that wrote into the checkout', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    // Workers that wait for each other, so the write and the accept happen inside the others' runs.
    const log = join(t.dir, 'started.log');
    const release = join(t.dir, 'release');
    const waitFor = join(t.dir, 'wait-for.json');
    const patient = join(t.dir, 'patient.mjs');
    writeFileSync(
      patient,
      `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const [release, log] = process.argv.slice(2);
const id = process.env.LIGHTWORKER_TASK_ID;
appendFileSync(log, id + ' ' + process.env.LIGHTWORKER_ATTEMPT + '\\n');
for (let i = 0; i < 1200 && !existsSync(release); i++) await new Promise((r) => setTimeout(r, 50));
if (process.cwd().includes('/worktrees/')) writeFileSync('work-' + id + '.txt', 'done\\n');
console.log(JSON.stringify({ summary: 'done', findings: [], files_changed: [], notes: null }));
`,
    );
    const evil = join(t.dir, 'evil.mjs');
    writeFileSync(
      evil,
      `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const [waitFor, log] = process.argv.slice(2);
const wanted = JSON.parse(readFileSync(waitFor, 'utf8'));
for (let i = 0; i < 1200; i++) {
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\\n') : [];
  if (wanted.every((w) => lines.some((l) => l.startsWith(w + ' ')))) break;
  await new Promise((r) => setTimeout(r, 50));
}
writeFileSync('evil.txt', 'a read-only worker wrote this\\n');
console.log(JSON.stringify({ summary: 'looked around', findings: [] }));
`,
    );
    const config = `[scheduler]
max_concurrency = 10
per_repository = 10

[workers.patient]
command = ${JSON.stringify([process.execPath, patient, release, log])}
max_concurrency = 8

[workers.evilbot]
command = ${JSON.stringify([process.execPath, evil, waitFor, log])}
`;
    const home = join(t.dir, 'home');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'config.toml'), config);
    const repo = makeRepo(join(t.dir, 'repo'));
    const c: Ctx = { dir: t.dir, home, repo, cli: (...args: string[]) => runCli(args, { home, cwd: repo, timeoutMs: 180_000 }) };
    const exec = (name: string, spec: Record<string, unknown>, verify: string) =>
      submit(c, name, 'execute', ['--mode', 'auto_execute', '--worker', 'mock', '--metadata', mock(spec), '--verify', verify]);
    const pass = JSON.stringify([process.execPath, '-e', 'process.exit(0)']);

    // Wave 1: three plain execute tasks, one repaired, one that ends failed (to retry), two readers.
    const plain = [];
    for (const n of [1, 2, 3]) plain.push(await exec(`plain ${n}`, { write_files: { [`p${n}.txt`]: `${n}\n` }, sleep_ms: 1500 }, pass));
    const repaired = await exec(
      'repaired',
      { write_files: { 'r.txt': 'first\n' }, sleep_ms: 500, followup: { write_files: { 'r.txt': 'fixed\n' } } },
      failingFirst(join(t.dir, 'count-repaired'), 1),
    );
    const retried = await exec('retried', { write_files: { 'retried.txt': 'x\n' }, sleep_ms: 500 }, failingFirst(join(t.dir, 'count-retried'), 2));
    const readers = [];
    for (const n of [1, 2]) readers.push(await submit(c, `reader ${n}`, 'explore', ['--worker', 'mock', '--metadata', mock({ sleep_ms: 1500 })]));
    const run1 = await c.cli('run', '--until-idle', '--timeout', '150');
    expect(run1.code, run1.stderr).toBe(0);
    for (const id of [...plain, repaired, ...readers]) {
      const task = await show(c, id);
      expect(task.status, `${task.name}: ${JSON.stringify(task.error)}`).toBe('completed');
    }
    expect((await inspections(c, repaired)).length).toBe(2); // the repair turn was inspected too
    expect((await show(c, retried)).error.code).toBe('verification_failed');

    // Wave 2: the retry, two patient execute tasks, a patient reader and a reader that writes into the
    // checkout once the others run; a wave-1 task is accepted (HEAD moves) while they all still run.
    expect((await c.cli('retry', retried, '--strategy', 'same')).code).toBe(0);
    const patientExec = [];
    for (const n of [1, 2]) patientExec.push(await submit(c, `patient ${n}`, 'execute', ['--mode', 'auto_execute', '--worker', 'patient']));
    const innocentReader = await submit(c, 'innocent reader', 'explore', ['--worker', 'patient']);
    writeFileSync(waitFor, JSON.stringify([...patientExec, innocentReader]));
    const culprit = await submit(c, 'culprit', 'explore', ['--worker', 'evilbot']);
    const runner = startCli(['run', '--until-idle', '--timeout', '150'], { home });
    const exited = new Promise<number | null>((r) => runner.on('exit', (code) => r(code)));
    try {
      for (let i = 0; i < 1200 && !existsSync(join(repo, 'evil.txt')); i++) await new Promise((r) => setTimeout(r, 50));
      expect(existsSync(join(repo, 'evil.txt'))).toBe(true);
      const acc = await c.cli('accept', plain[0], '--json');
      expect(acc.code, acc.stderr).toBe(0);
      writeFileSync(release, '');
      expect(await exited).toBe(0);
    } finally {
      if (runner.exitCode === null) runner.kill('SIGKILL');
    }

    const bad = await show(c, culprit);
    expect(bad.status).toBe('failed');
    expect(bad.error.code).toBe('boundary_violation');
    expect(bad.error.message).toContain(`${join(repo, 'evil.txt')} (written in the source checkout by a read-only task`);
    // The documented limit: a reader running in the same checkout at the time is blamed too, and both
    // name each other.
    const both = await show(c, innocentReader);
    expect(both.error?.code).toBe('boundary_violation');
    expect(both.error.message).toContain(join(repo, 'evil.txt'));
    expect(both.error.message).toContain(`${culprit} (explore)`);
    expect(bad.error.message).toContain(`${innocentReader} (explore)`);

    for (const id of [...patientExec, retried]) {
      const task = await show(c, id);
      expect(task.status, `${task.name}: ${JSON.stringify(task.error)}`).toBe('completed');
    }
    expect((await show(c, retried)).attempt).toBe(2);
    for (const id of patientExec) {
      const others = (await inspections(c, id)).flatMap((p) => (p.sourceChangesByOthers as string[] | undefined) ?? []);
      expect(others).toContainEqual(expect.stringContaining(`${join(repo, 'evil.txt')} (read-only task(s) `));
      expect(others).toContainEqual(expect.stringMatching(/HEAD \(moved from .* \(LightWorker accepting a task\)$/));
    }
    expect((await show(c, plain[0])).status).toBe('accepted');
  }, 400_000);
});
