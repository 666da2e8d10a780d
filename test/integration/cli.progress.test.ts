import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, until } from '../helpers/procs.js';
import { runCliOnTty } from '../helpers/pty.js';

/** Live status lines: redrawn in place on a terminal, plain lines in a pipe, none with --quiet. */
let t: ReturnType<typeof tempDir>;
let repo: string;
let n = 0;
const children: ChildProcess[] = [];
const ESC = '\x1b';

beforeAll(() => {
  t = tempDir('lw-progress-');
  repo = makeRepo(join(t.dir, 'repo'));
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  t.cleanup();
});

function freshHome(): string {
  return join(t.dir, `home-${++n}`);
}

async function submit(home: string, mock: Record<string, unknown>, kind = 'explore'): Promise<string> {
  const r = await runCli(['submit', '-w', repo, '--kind', kind, '--metadata', JSON.stringify({ mock }), '--json', `progress ${n}`], { home });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).task.id as string;
}

describe('run --until-idle', () => {
  it('on a terminal redraws one status line in place, keeps a line per ended task, and writes nothing to stdout', async () => {
    const home = freshHome();
    const id = await submit(home, { sleep_ms: 2500 });
    const r = await runCliOnTty(['run', '--until-idle'], { home });
    expect(r.code, r.terminal).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.terminal).toContain('\r\x1b[2K'); // redrawn in place
    expect(r.terminal).toMatch(/leading · 1 running · [12]s/); // the clock ticks while the task runs
    expect(r.terminal).toContain(`${id}  completed`);
    // The live line is cleared at the end: the last thing on the terminal is the clear, not a stale status.
    expect(r.terminal.endsWith('\r\x1b[2K')).toBe(true);
  });

  it('in a pipe prints plain lines only when the status changes, and --quiet prints none', async () => {
    const home = freshHome();
    const id = await submit(home, { sleep_ms: 300 });
    const r = await runCli(['run', '--until-idle'], { home });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain(ESC);
    expect(r.stderr).not.toContain('\r');
    const lines = r.stderr.trim().split('\n');
    expect(lines.some((l) => l.startsWith(`${id}  completed`))).toBe(true);
    expect(lines.some((l) => /^leading · 1 (running|starting|queued)/.test(l))).toBe(true);
    for (let i = 1; i < lines.length; i++) expect(lines[i]).not.toBe(lines[i - 1]); // only changes

    const quiet = freshHome();
    await submit(quiet, { sleep_ms: 100 });
    const q = await runCli(['run', '--until-idle', '--quiet'], { home: quiet });
    expect(q.code, q.stderr).toBe(0);
    expect(q.stderr).toBe('');
  });
});

describe('wait', () => {
  it('shows the waited task live on a terminal while --json stdout stays one JSON document', async () => {
    const home = freshHome();
    const id = await submit(home, { sleep_ms: 2000 });
    const runner = startCli(['run', '--quiet'], { home });
    children.push(runner);
    const r = await runCliOnTty(['wait', id.slice(0, 8), '--json'], { home });
    runner.kill('SIGTERM');
    await exited(runner);
    expect(r.code, r.terminal).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ reason: 'settled', tasks: [{ id, status: 'completed' }] });
    expect(r.terminal).toContain(`\r\x1b[2Kwaiting: ${id.slice(0, 8)} running · explore on mock`);
  });

  it('in a pipe says when no scheduler runs, with plain lines; --quiet keeps stderr empty', async () => {
    const home = freshHome();
    const id = await submit(home, {});
    const r = await runCli(['wait', id, '--timeout', '1'], { home });
    expect(r.code).toBe(1); // timed out: nothing runs the scheduler
    expect(r.stderr).not.toContain(ESC);
    expect(r.stderr).toContain('no scheduler is running in this home; start one with `lightworker run`');
    expect(r.stderr).toContain(`waiting: ${id.slice(0, 8)} queued · explore on mock`);
    expect(r.stdout.split('\n')[0]).toBe('timeout');
    const q = await runCli(['wait', id, '--timeout', '0', '--quiet'], { home });
    expect(q.stderr).toBe('');
    // A task that needs a person does not need a scheduler: no such note.
    const gated = await runCli(['submit', '-w', repo, '--kind', 'execute', '--json', 'needs approval'], { home });
    const g = await runCli(['wait', JSON.parse(gated.stdout).task.id], { home });
    expect(g.stdout.split('\n')[0]).toBe('needs_approval');
    expect(g.stderr).not.toContain('no scheduler');
  });
});

describe('orchestrate --wait and compare --wait', () => {
  it('orchestrate --wait follows the planner and the tasks its plan adds, then prints the tree', async () => {
    const home = freshHome();
    const plan = {
      summary: 'look, then check',
      tasks: [
        { id: 'look', title: 'task look', kind: 'explore', objective: 'look around', depends_on: [], profile: null, success_criteria: ['looked'], verify: [] },
        { id: 'check', title: 'task check', kind: 'review', objective: 'check it', depends_on: ['look'], profile: null, success_criteria: ['checked'], verify: [] },
      ],
    };
    const runner = startCli(['run', '--quiet'], { home });
    children.push(runner);
    const runnerErr = captureStderr(runner);
    await until(async () => (await runCli(['status', '--json'], { home })).stdout.includes('"pid"'), 30_000, 'the runner to lead');
    const r = await runCli(['orchestrate', '-w', repo, '--metadata', JSON.stringify({ mock: { result: plan } }), '--wait', 'split', 'it'], { home });
    runner.kill('SIGTERM');
    await exited(runner);
    expect(r.code, r.stderr + runnerErr()).toBe(0);
    expect(r.stderr).not.toContain(ESC);
    expect(r.stderr).toMatch(/^goal: .* plan on mock/m); // the planner alone first
    expect(r.stderr).toMatch(/^goal: 3 tasks · /m); // then the planner and its two children
    const out = r.stdout.split('\n');
    expect(out[1]).toBe('settled');
    expect(r.stdout).toMatch(/completed\s+explore\s+task look/);
    expect(r.stdout).toMatch(/completed\s+review\s+task check/);
  }, 90_000);

  it('compare --wait stops when the candidates need approval and prints the report', async () => {
    const home = freshHome();
    const r = await runCli(['compare', '-w', repo, '--workers', 'mock,codex', '--wait', 'add', 'a', 'file'], { home });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('compare: 2 tasks · 2 awaiting approval');
    expect(r.stdout.split('\n')[0]).toBe('needs_approval');
    expect(r.stdout).toMatch(/WORKER\s+TASK\s+STATUS/);
    const json = await runCli(['compare', '-w', repo, '--workers', 'mock,codex', '--wait', '--json', 'add', 'b'], { home });
    expect(JSON.parse(json.stdout).candidates).toHaveLength(2);
  });
});
