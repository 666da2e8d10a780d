// Scenario: harm to the home under a running leader. (1) A full file system: the home on a small tmpfs
// (root only; skipped with the reason elsewhere, a failure under CI=true) filled to the last byte while tasks
// run, then freed: every task must end once space returns, and none may start while it is full. (2) The
// store deleted, truncated, or its middle pages overwritten, each under a leader with `tasks` tasks: the
// leader must stop saying so (exit 1, killing its workers), and no later command may create a store in its
// place or work on it as if healthy (`tasks` and `doctor` must fail naming it).
import type { ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { fillDisk, freeDisk, harmStore, loggedPids, mountSmallFs, type Harm } from '../helpers/damage.js';

export interface DamageOptions {
  /** Tasks in each harmed home (4 of them long, running when the harm comes). */
  tasks: number;
  log: (line: string) => void;
}

export interface DamageFigures {
  /** False when no small file system could be mounted (then `fullDiskSkipped` says why). */
  fullDiskRun: boolean;
  fullDiskSkipped: string | null;
  fullDiskTasks: number;
  /** Tasks not ended 30 s after space returned. */
  stuckTasks: number;
  /** Tasks that left `queued` while the store could not be written. */
  startedWhileFull: number;
  /** The leader never said what was full and where. */
  fullUnsaid: number;
  harms: Harm[];
  /** Harms the leader did not stop for, plus commands that recreated the store or called it healthy. */
  unnoticed: number;
  /** Worker processes alive after the leader stopped for a harm. */
  survivors: number;
  notes: string[];
}

const NOTICE_MS = 30_000;

type Submit = (mock: Record<string, unknown>, name: string) => Promise<string>;

function openHome(home: string, repo: string, config: string): { engine: Engine; submit: Submit; status: (id: string) => string } {
  const engine = new Engine({ home });
  writeFileSync(engine.home.config, config);
  const ctx = { engine, face: 'cli' as const, depth: 0 };
  const submit: Submit = async (mock, name) => ((await runCommand(COMMANDS, ctx, 'delegate_task', { objective: name, name, kind: 'explore', workspace: repo, worker: 'mock', metadata: { mock } })) as { task: { id: string } }).task.id;
  const status = (id: string) => (engine.db.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string }).status;
  return { engine, submit, status };
}

async function stopChild(c: ChildProcess): Promise<void> {
  if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await exited(c);
}

async function runFullDisk(root: string, f: DamageFigures): Promise<void> {
  const mounted = mountSmallFs(join(root, 'fs'), 24);
  if ('reason' in mounted) {
    if (process.env.CI === 'true') throw new Error(`chaos damage: the full-disk case needs a small file system (CI runs as root): ${mounted.reason}`);
    f.fullDiskSkipped = mounted.reason;
    f.notes.push(`full disk not run: ${mounted.reason}`);
    return;
  }
  f.fullDiskRun = true;
  const log = join(root, 'full.log');
  const { engine, submit, status } = openHome(join(mounted.dir, 'home'), makeRepo(join(root, 'full-repo')), '[scheduler]\nkill_grace_ms = 300\nmax_concurrency = 3\nper_root = 3\nper_repository = 3\n');
  const leader = startCli(['run'], { home: engine.home.root });
  const stderr = captureStderr(leader);
  let ballast: string | null = null;
  try {
    const ids = await Promise.all([0, 1, 2].map((i) => submit({ sleep_ms: 2500, append_log: log }, `full ${i}`)));
    await until(() => loggedPids(log).length === 3, 30_000, 'three workers running');
    const waiting = await Promise.all([0, 1, 2].map((i) => submit({ sleep_ms: 10 }, `full queued ${i}`)));
    f.fullDiskTasks = ids.length + waiting.length;
    ballast = fillDisk(mounted.dir);
    await until(() => loggedPids(log).every((p) => !isAlive(p)), 30_000, 'the workers to end');
    const said = await until(() => /cannot be written: the file system holding .* is full/.test(stderr()), NOTICE_MS, 'the leader to say so').then(() => true, () => false);
    if (!said) {
      f.fullUnsaid++;
      f.notes.push(`full disk: the leader never said what is full; its stderr: ${stderr().slice(-500)}`);
    }
    f.startedWhileFull = waiting.filter((id) => status(id) !== 'queued').length;
    freeDisk(ballast);
    ballast = null;
    const all = [...ids, ...waiting];
    await until(() => all.every((id) => status(id) === 'completed'), 30_000, 'every task to end').catch(() => undefined);
    const stuck = all.filter((id) => status(id) !== 'completed');
    f.stuckTasks += stuck.length;
    if (stuck.length) f.notes.push(`full disk: not ended 30 s after space returned: ${stuck.map((id) => `${id} ${status(id)}`).join(', ')}`);
  } finally {
    if (ballast) freeDisk(ballast);
    await stopChild(leader);
    engine.close();
    mounted.unmount();
  }
}

async function runHarm(root: string, harm: Harm, tasks: number, f: DamageFigures): Promise<void> {
  const home = join(root, harm);
  const log = join(root, `${harm}.log`);
  const { engine, submit } = openHome(home, makeRepo(join(root, `${harm}-repo`)), '[store]\ncheck_interval_s = 1\n[scheduler]\nkill_grace_ms = 300\nmax_concurrency = 4\nper_root = 4\nper_repository = 4\n');
  for (let i = 0; i < tasks; i++) await submit(i < 4 ? { sleep_ms: 60_000, append_log: log } : { sleep_ms: 50 }, `${harm} ${i}`);
  engine.close();
  const leader = startCli(['run'], { home });
  const stderr = captureStderr(leader);
  try {
    await until(() => loggedPids(log).length >= Math.min(4, tasks), 60_000, 'the long tasks running');
    harmStore(join(home, 'lightworker.db'), harm);
    const code = await Promise.race([exited(leader), new Promise<string>((r) => setTimeout(() => r('still running'), NOTICE_MS))]);
    if (code !== 1 || !/stopping, what ran here killed: the store /.test(stderr())) {
      f.unnoticed++;
      f.notes.push(`${harm}: the leader did not stop for it (exit ${String(code)}): ${stderr().slice(-300)}`);
    }
    await until(() => loggedPids(log).every((p) => !isAlive(p)), 10_000, 'workers gone').catch(() => undefined);
    const alive = loggedPids(log).filter(isAlive);
    f.survivors += alive.length;
    for (const [args, what] of [[['tasks'], 'tasks'], [['doctor'], 'doctor']] as const) {
      const r = await runCli([...args], { home });
      if (r.code === 0) {
        f.unnoticed++;
        f.notes.push(`${harm}: \`${what}\` answered as if the store were healthy`);
      }
    }
    if (harm === 'delete' && existsSync(join(home, 'lightworker.db'))) {
      f.unnoticed++;
      f.notes.push('delete: a command created a new store where the deleted one was');
    }
    for (const p of alive) process.kill(p, 'SIGKILL');
  } finally {
    await stopChild(leader);
  }
}

/** Run both parts and count what must be zero. */
export async function runDamage(o: DamageOptions): Promise<DamageFigures> {
  const t = tempDir('lw-chaos-damage-');
  const f: DamageFigures = { fullDiskRun: false, fullDiskSkipped: null, fullDiskTasks: 0, stuckTasks: 0, startedWhileFull: 0, fullUnsaid: 0, harms: ['delete', 'truncate', 'corrupt'], unnoticed: 0, survivors: 0, notes: [] };
  try {
    o.log('chaos damage: a full file system …');
    await runFullDisk(t.dir, f);
    for (const harm of f.harms) {
      o.log(`chaos damage: store ${harm} under a leader with ${o.tasks} tasks …`);
      await runHarm(t.dir, harm, o.tasks, f);
    }
  } finally {
    t.cleanup();
  }
  return f;
}
