import type { ChildProcess } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getTask } from '../../main/store/tasks.js';
import { startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { captureStderr, exited, until } from '../helpers/procs.js';
import { ESCAPE_AGENT, SHAPES, cgroupWritable, containmentOf, escapeObjective, escapeTokens, holdersOf, killHolders, survivorsOf } from '../helpers/escapes.js';

// A worker that leaves six processes behind, each out of LightWorker's process group and without its
// environment marker (own session, env -i, unset, a daemon with its fds closed, renamed): none of them may
// outlive the task, however it ends. Found by their argv token alone, never by the marker they dropped.
// Runs twice on Linux: with the per-task cgroup (where the machine allows one) and with the spawner
// helper's child subreaper alone (LIGHTWORKER_CGROUP=0), as on a machine without a writable cgroup v2.
const linux = process.platform === 'linux';
const cgroups = linux && cgroupWritable();
const modes = [
  { name: `default containment (${cgroups ? 'a cgroup per tree' : 'no writable cgroup here: subreaper'})`, env: {} as Record<string, string>, holder: cgroups ? 'cgroup' : 'subreaper' },
  { name: 'subreaper only (LIGHTWORKER_CGROUP=0)', env: { LIGHTWORKER_CGROUP: '0' }, holder: 'subreaper' },
];

let h: TestHome;
let tokens: string[];
/** Every token set a test used: cleanup kills what holds any of them, whatever failed. */
let used: string[] = [];
const fresh = () => {
  const t = escapeTokens();
  used.push(...t);
  return t;
};
const leaders: ChildProcess[] = [];
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nlease_ttl_ms = 1500\nkill_grace_ms = 300\nauto_resume_orphans = false\n');
  used = [];
  tokens = fresh();
});
afterEach(() => {
  for (const c of leaders.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  killHolders(used);
  h.cleanup();
});

const status = (id: string) => getTask(h.engine.db, id)!.status;

function lead(env: Record<string, string>): { proc: ChildProcess; stderr: () => string } {
  const proc = startCli(['run'], { home: h.home, env });
  leaders.push(proc);
  return { proc, stderr: captureStderr(proc) };
}

async function submit(hold: boolean, extra: Record<string, unknown> = {}): Promise<string> {
  await h.call('link_worker', { name: 'escaper', command_json: ['bash', ESCAPE_AGENT, '{prompt}'] });
  const { task } = await h.call('delegate_task', { objective: escapeObjective(tokens, hold), workspace: h.repo, worker: 'escaper', ...extra });
  return task.id as string;
}

/** Every shape runs (one process holding each token), each held by the containment of the mode under test. */
async function allSixRunning(holder: string): Promise<void> {
  await until(() => [...holdersOf(tokens).values()].every((p) => p.length > 0), 30_000, () => `all six escapes to run (${describeSurvivors()})`);
  const held = [...holdersOf(tokens).values()].flat().map(containmentOf);
  expect(held).toEqual(held.map(() => holder));
}

function describeSurvivors(): string {
  const held = holdersOf(tokens);
  return SHAPES.map((s, i) => `${s}: ${held.get(tokens[i])!.length}`).join('; ');
}

/** Nothing of the task lives on (a sweep's grace is 300 ms: what is left after that is a survivor). */
async function expectNoSurvivors(): Promise<void> {
  await until(() => survivorsOf(tokens) === 0, 10_000, () => `no survivors, still: ${describeSurvivors()}`).catch(() => undefined);
  expect(describeSurvivors()).toBe(SHAPES.map((s) => `${s}: 0`).join('; '));
}

describe.skipIf(!linux).each(modes)('six escape shapes, every ending: $name', ({ env, holder }) => {
  it('completed: the worker exits, its leftovers do not outlive the task', async () => {
    lead(env);
    const id = await submit(false);
    await until(() => status(id) === 'completed', 60_000, () => `the task to complete (${status(id)})`);
    await expectNoSurvivors();
  }, 90_000);

  it('cancel', async () => {
    lead(env);
    const id = await submit(true);
    await allSixRunning(holder);
    await h.call('cancel_task', { id });
    await until(() => status(id) === 'cancelled', 30_000, () => `the task to be cancelled (${status(id)})`);
    await expectNoSurvivors();
  }, 90_000);

  it('timeout', async () => {
    lead(env);
    const id = await submit(true, { timeout_s: 8 });
    await allSixRunning(holder);
    await until(() => status(id) === 'timed_out', 30_000, () => `the task to time out (${status(id)})`);
    await expectNoSurvivors();
  }, 90_000);

  it('leader kill -9: the next leader takes over and nothing of the task survives', async () => {
    const first = lead(env);
    const id = await submit(true);
    await allSixRunning(holder);
    await until(() => status(id) === 'running', 20_000, 'the task to run');
    first.proc.kill('SIGKILL');
    await exited(first.proc);
    lead(env);
    await until(() => status(id) === 'orphaned', 30_000, () => `the next leader to take over (${status(id)})`);
    await expectNoSurvivors();
  }, 90_000);

  it('leader stop: SIGTERM drains, a second SIGTERM cancels, `run` exits, and nothing survives it', async () => {
    const leader = lead(env);
    const id = await submit(true);
    await allSixRunning(holder);
    await until(() => status(id) === 'running', 20_000, 'the task to run');
    leader.proc.kill('SIGTERM');
    await until(() => /waiting for it to finish/.test(leader.stderr()), 20_000, () => `the leader to say it drains (${leader.stderr()})`);
    // Signals within 500 ms of each other are one keypress: signal again until it says it cancels.
    await until(() => (/cancelling/.test(leader.stderr()) || leader.proc.kill('SIGTERM'), /cancelling/.test(leader.stderr())), 20_000, 'the second signal to cancel', 200);
    await exited(leader.proc);
    expect(status(id)).toBe('cancelled');
    await expectNoSurvivors();
  }, 90_000);

  it('two tasks at once: one ending kills its own escapes, never the other one’s', async () => {
    lead(env);
    const first = tokens;
    const a = await submit(true);
    await allSixRunning(holder);
    tokens = fresh();
    const second = tokens;
    const { task: b } = await h.call('delegate_task', { objective: escapeObjective(second, false), workspace: h.repo, worker: 'escaper' });
    await until(() => status(b.id) === 'completed', 60_000, () => `the second task to complete (${status(b.id)})`);
    // The first task still runs: every one of its escapes lives on.
    tokens = first;
    expect(describeSurvivors()).toBe(SHAPES.map((sh) => `${sh}: 1`).join('; '));
    // With a cgroup per tree the second task's escapes die with it; by orphan birth alone (no cgroup) those born
    // while the first task ran are not told apart from its own until it ends too.
    tokens = second;
    if (holder === 'cgroup') await expectNoSurvivors();
    await h.call('cancel_task', { id: a });
    await until(() => status(a) === 'cancelled', 30_000, () => `the first task to be cancelled (${status(a)})`);
    await expectNoSurvivors();
    tokens = first;
    await expectNoSurvivors();
  }, 120_000);
});
