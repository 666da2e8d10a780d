import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { Engine } from '../../main/engine.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { TERMINAL, type Task } from '../../main/tasks/types.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';
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
  engine: Engine;
  /** The command table, in this process (same home and database as the runner's process). */
  call: (name: string, input: unknown) => Promise<any>;
  /** `lightworker run --until-idle` in its own process: the real runner. */
  run: () => Promise<void>;
}

function setup(config: string): Ctx {
  const t = tempDir();
  const home = join(t.dir, 'home');
  withTestStore(home, config);
  const repo = makeRepo(join(t.dir, 'repo'));
  const engine = new Engine({ home });
  cleanup = () => {
    engine.close();
    t.cleanup();
  };
  const call = (name: string, input: unknown) => runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, name, input) as Promise<any>;
  const run = async () => {
    const r = await runCli(['run', '--until-idle', '--timeout', '150'], { home, cwd: repo, timeoutMs: 180_000 });
    expect(r.code, r.stderr).toBe(0);
  };
  return { dir: t.dir, home, repo, engine, call, run };
}

/** A verify argv that fails its first `fails` runs (counted in the file `counter`), then passes. */
function failingFirst(counter: string, fails: number): string[] {
  const script = `const fs=require('fs');const f=process.argv[1];const n=(fs.existsSync(f)?+fs.readFileSync(f,'utf8'):0)+1;fs.writeFileSync(f,String(n));process.exit(n>${fails}?0:1)`;
  return [process.execPath, '-e', script, counter];
}

async function submit(c: Ctx, kind: string, input: Record<string, unknown>): Promise<string> {
  const { task } = await c.call('delegate_task', { objective: `${kind} something`, kind, workspace: c.repo, ...input });
  return task.id as string;
}

const show = (c: Ctx, id: string): Task => requireTask(c.engine.db, id);

function inspections(c: Ctx, id: string): Record<string, unknown>[] {
  return listEvents(c.engine.db, { taskId: id, types: ['changes.inspected'] }).events.map((e) => e.payload);
}

const mock = (spec: Record<string, unknown>) => ({ mock: spec });
const PASS = [process.execPath, '-e', 'process.exit(0)'];

/** A linked worker that records its start, then waits for `release` (execute kinds write one file). */
const PATIENT = `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const [release, log] = process.argv.slice(2);
const id = process.env.LIGHTWORKER_TASK_ID;
appendFileSync(log, id + ' ' + process.env.LIGHTWORKER_ATTEMPT + '\\n');
for (let i = 0; i < 2400 && !existsSync(release); i++) await new Promise((r) => setTimeout(r, 50));
if (process.cwd().includes('/worktrees/')) writeFileSync('work-' + id + '.txt', 'done\\n');
console.log(JSON.stringify({ summary: 'done', findings: [], files_changed: [], notes: null }));
`;

/**
 * A linked read-only worker that, once the tasks listed in `waitFor` run, writes into its cwd: the
 * checkout, as it is declared sandboxed (`read_only_sandbox`), so it runs in place — a sandbox that
 * fails, which the boundary check still catches.
 */
const CULPRIT = `import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const [waitFor, log] = process.argv.slice(2);
const wanted = JSON.parse(readFileSync(waitFor, 'utf8'));
for (let i = 0; i < 2400; i++) {
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\\n') : [];
  if (wanted.every((w) => lines.some((l) => l.startsWith(w + ' ')))) break;
  await new Promise((r) => setTimeout(r, 50));
}
writeFileSync('evil.txt', 'a read-only worker wrote this\\n');
console.log(JSON.stringify({ summary: 'looked around', findings: [] }));
`;

async function waitForFile(path: string): Promise<boolean> {
  for (let i = 0; i < 2400 && !existsSync(path); i++) await new Promise((r) => setTimeout(r, 50));
  return existsSync(path);
}

describe('boundary checks with retries and concurrent tasks (real runner)', () => {
  it('a retry of an execute task that already committed completes with its own commit', async () => {
    const c = setup('[verify]\nauto_repair = 0\n');
    const id = await submit(c, 'execute', {
      mode: 'auto_execute',
      worker: 'mock',
      metadata: mock({ write_files: { 'a.txt': 'from the worker\n' } }),
      verify: [failingFirst(join(c.dir, 'count'), 1)],
    });
    await c.run();
    expect(show(c, id).status).toBe('failed');
    expect(show(c, id).error?.code).toBe('verification_failed');
    // Until accept, the task branch lives in the task's own repository.
    const committed = git(show(c, id).worktreePath!, 'rev-parse', `lightworker/${id}`);

    await c.call('retry_task', { id, strategy: 'same' });
    await c.run();
    const second = show(c, id);
    expect(second.error?.message ?? null, 'attempt 2 must not fail').toBeNull();
    expect(second.status).toBe('completed');
    expect(second.attempt).toBe(2);
    // Attempt 2 made its own commit on the task branch; attempt 1's commit is kept on a side branch.
    expect(git(second.worktreePath!, 'log', '-1', '--format=%s', `lightworker/${id}`)).toContain('attempt 2');
    // The retry brought attempt 1's branch into the repository before starting afresh.
    expect(git(c.repo, 'branch', '--list', `lightworker/${id}-attempt-1-*`, '--format=%(objectname)')).toBe(committed);
  }, 240_000);

  it('several execute and read-only tasks, retried, repaired and accepted meanwhile, blame only tasks that could have written into the checkout', async () => {
    const t = tempDir('lw-workers-');
    const log = join(t.dir, 'started.log');
    const release = join(t.dir, 'release');
    const waitFor = join(t.dir, 'wait-for.json');
    writeFileSync(join(t.dir, 'patient.mjs'), PATIENT);
    writeFileSync(join(t.dir, 'culprit.mjs'), CULPRIT);
    const c = setup(`[scheduler]
max_concurrency = 10
per_repository = 10

[workers.patient]
command = ${JSON.stringify([process.execPath, join(t.dir, 'patient.mjs'), release, log])}
max_concurrency = 8
read_only_sandbox = true

[workers.culprit]
command = ${JSON.stringify([process.execPath, join(t.dir, 'culprit.mjs'), waitFor, log])}
read_only_sandbox = true
`);
    const done = cleanup!;
    cleanup = () => {
      done();
      t.cleanup();
    };
    const exec = (spec: Record<string, unknown>, verify: string[]) =>
      submit(c, 'execute', { mode: 'auto_execute', worker: 'mock', metadata: mock(spec), verify: [verify] });

    // Wave 1: three plain execute tasks, one auto-repaired, one that ends failed (retried below), two readers.
    const plain = [];
    for (const n of [1, 2, 3]) plain.push(await exec({ write_files: { [`p${n}.txt`]: `${n}\n` }, sleep_ms: 1000 }, PASS));
    const repaired = await exec(
      { write_files: { 'r.txt': 'first\n' }, followup: { write_files: { 'r.txt': 'fixed\n' } } },
      failingFirst(join(c.dir, 'count-repaired'), 1),
    );
    const retried = await exec({ write_files: { 'retried.txt': 'x\n' } }, failingFirst(join(c.dir, 'count-retried'), 2));
    const readers = [];
    for (let n = 0; n < 2; n++) readers.push(await submit(c, 'explore', { worker: 'mock', metadata: mock({ sleep_ms: 1000 }) }));
    await c.run();
    for (const id of [...plain, repaired, ...readers]) {
      const task = show(c, id);
      expect(task.status, `${task.name}: ${JSON.stringify(task.error)}`).toBe('completed');
    }
    expect(inspections(c, repaired)).toHaveLength(2); // the repair turn was inspected too
    expect(show(c, retried).error?.code).toBe('verification_failed');

    // Wave 2: the retry, two patient execute tasks, a patient reader, and a reader that writes into the
    // checkout once those run; a wave-1 task is accepted (HEAD moves) while they all still run.
    await c.call('retry_task', { id: retried, strategy: 'same' });
    const patientExec = [];
    for (let n = 0; n < 2; n++) patientExec.push(await submit(c, 'execute', { mode: 'auto_execute', worker: 'patient' }));
    const innocentReader = await submit(c, 'explore', { worker: 'patient' });
    writeFileSync(waitFor, JSON.stringify([...patientExec, innocentReader]));
    const culprit = await submit(c, 'explore', { worker: 'culprit' });
    const escaped = join(c.repo, 'escaped.txt');
    let escaper = '';
    const runner = startCli(['run', '--until-idle', '--timeout', '150'], { home: c.home });
    const exited = new Promise<number | null>((r) => runner.on('exit', (code) => r(code)));
    try {
      expect(await waitForFile(join(c.repo, 'evil.txt'))).toBe(true);
      // Now that the others run: an execute worker escaping its worktree by an absolute path.
      escaper = await submit(c, 'execute', {
        mode: 'auto_execute',
        worker: 'mock',
        metadata: mock({ write_files: { 'inside.txt': 'fine\n', [escaped]: 'outside\n' } }),
        verify: [PASS],
      });
      for (let i = 0; i < 2400 && !TERMINAL.has(show(c, escaper).status); i++) await new Promise((r) => setTimeout(r, 50));
      const acc = await c.call('accept_task', { id: plain[0] }); // from this process, while the runner runs
      expect(acc.task.status).toBe('accepted');
      writeFileSync(release, '');
      expect(await exited).toBe(0);
    } finally {
      if (runner.exitCode === null) runner.kill('SIGKILL');
    }

    const evil = join(c.repo, 'evil.txt');
    const bad = show(c, culprit);
    expect(bad.status).toBe('failed');
    expect(bad.error?.code).toBe('boundary_violation');
    expect(bad.error?.message).toContain(`${evil} (written in the source checkout by a read-only task`);
    // The culprit names the reader that ran in the same checkout then; but its write was put back when
    // the culprit ended (custody), before the reader's own check, so the reader is not blamed for it.
    expect(bad.error?.message).toContain(`${innocentReader} (explore)`);
    expect(existsSync(evil)).toBe(false);
    expect(listEvents(c.engine.db, { taskId: culprit, types: ['custody.restored'] }).events.at(-1)?.payload.restored).toEqual(
      expect.arrayContaining([expect.objectContaining({ area: 'worktree', path: 'evil.txt', change: 'added' })]),
    );
    const reader = show(c, innocentReader);
    expect(reader.status, JSON.stringify(reader.error)).toBe('completed');

    const esc = show(c, escaper);
    expect(esc.error?.code).toBe('boundary_violation');
    expect(esc.error?.message).toContain(`${escaped} (written in the source checkout, named in the worker's tool calls)`);
    // The readers are not blamed for it: the escaping worker named the path itself.
    expect(reader.error?.message ?? '').not.toContain(escaped);
    expect(bad.error?.message).not.toContain(escaped);

    for (const id of [...patientExec, retried]) {
      const task = show(c, id);
      expect(task.status, `${task.name}: ${JSON.stringify(task.error)}`).toBe('completed');
    }
    expect(show(c, retried).attempt).toBe(2);
    for (const id of patientExec) {
      const others = inspections(c, id).flatMap((p) => (p.sourceChangesByOthers as string[] | undefined) ?? []);
      // The culprit's and the escaper's writes were put back when they ended, before these tasks' checks;
      // the accept stays (LightWorker's own) and is told apart.
      expect(others.filter((o) => o.includes(evil) || o.includes(escaped))).toEqual([]);
      expect(others).toContainEqual(expect.stringMatching(/HEAD \(moved from .* \(LightWorker accepting a task\)$/));
    }
    expect(existsSync(escaped)).toBe(false);
  }, 400_000);
});
