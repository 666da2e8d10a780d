import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  inspectChanges,
  prepareWorkspace,
  runVerification,
  type ChangeReport,
  type PreparedWorkspace,
  type VerifyReport,
} from '../../main/isolation/workspace.js';
import { requireTask } from '../../main/store/tasks.js';
import { transition } from '../../main/tasks/state.js';
import type { Task, TaskStatus } from '../../main/tasks/types.js';
import type { TestHome } from '../helpers/env.js';

/** git in `cwd`, argv only; returns trimmed stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    .toString()
    .trim();
}

/** SHA-256 over every path, type, mode and byte under `dir` (`.git` included): "byte-identical" checks. */
export function treeHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, p));
      h.update(`${p}\0${st.mode}\0`);
      if (st.isDirectory()) walk(p);
      else if (st.isSymbolicLink()) h.update(readlinkSync(join(dir, p)));
      else h.update(readFileSync(join(dir, p)));
    }
  };
  walk('');
  return h.digest('hex');
}

export function writeIn(dir: string, files: Record<string, string>): void {
  for (const [p, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), body);
  }
}

/** Move a task along the state machine as the runner would. */
export function drive(h: TestHome, id: string, ...path: TaskStatus[]): Task {
  let t = requireTask(h.engine.db, id);
  for (const to of path) {
    const from = t.status;
    t = h.engine.write(() => transition(h.engine.db, id, from, to, { reason: 'test' }));
  }
  return t;
}

/** Create + approve an execute task and bring it to `starting` (claimed). */
export async function newExecuteTask(h: TestHome, input: Record<string, unknown> = {}): Promise<Task> {
  const { task } = await h.call('delegate_task', {
    objective: 'change things',
    kind: 'execute',
    workspace: h.repo,
    verify: [['node', '-e', 'process.exit(0)']],
    ...input,
  });
  if (task.status === 'awaiting_approval') await h.call('approve_task', { id: task.id });
  return drive(h, task.id, 'starting');
}

export interface SimulatedRun {
  task: Task;
  ws: PreparedWorkspace;
  changes: ChangeReport;
  verify: VerifyReport | null;
}

/**
 * What the runner does, with `work` standing in for the worker (it gets the workdir). Ends completed
 * when changes are within bounds and verification passes, else failed.
 */
export async function simulateRun(h: TestHome, task: Task, work: (workdir: string) => void | Promise<void>): Promise<SimulatedRun> {
  const ws = await prepareWorkspace(h.engine, requireTask(h.engine.db, task.id));
  drive(h, task.id, 'running');
  await work(ws.workdir);
  drive(h, task.id, 'verifying');
  const changes = await inspectChanges(h.engine, requireTask(h.engine.db, task.id), ws);
  if (!changes.ok) return { task: drive(h, task.id, 'failed'), ws, changes, verify: null };
  const verify = await runVerification(h.engine, requireTask(h.engine.db, task.id), ws, new AbortController().signal);
  return { task: drive(h, task.id, verify.ok ? 'completed' : 'failed'), ws, changes, verify };
}
