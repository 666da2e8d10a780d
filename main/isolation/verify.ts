import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { redactText } from '../core/redact.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent, listEvents } from '../store/events.js';
import { updateRunFields } from '../store/fence.js';
import type { Task, VerifyCommand } from '../tasks/types.js';
import { treeMarkerEnv } from '../platform/proc/marker.js';
import { commandEnv, runBounded } from '../platform/proc/bounded-run.js';
import { gitTry } from '../platform/git/git-exec.js';
import { getAllocation, setVerifyOutcome } from '../store/worktrees.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

export interface VerifyCommandOutcome {
  command: VerifyCommand;
  exitCode: number | null;
  durationMs: number;
  outputTail: string;
  timedOut: boolean;
}

export interface VerifyRun {
  ok: boolean;
  results: VerifyCommandOutcome[];
  log: string | null;
}

/** Bytes of output kept per command in events (the whole output goes to the log artifact). */
export const VERIFY_TAIL_BYTES = 8 * 1024;

/**
 * Run the task's verify commands in `cwd`, in order, stopping at the first failure. Each runs in its own
 * process group with `timeoutS`, an environment of only PATH/HOME/LANG/LC_ALL/TMPDIR + `env`, and its
 * tree is killed on timeout or abort. Records `verify.started` / `verify.command` / `verify.completed`
 * events and, for a worktree, the outcome together with the commit it applies to (accept checks both).
 */
export async function verifyIn(
  engine: EngineContext,
  task: Task,
  cwd: string,
  env: Record<string, string>,
  signal: AbortSignal,
): Promise<VerifyRun> {
  const commands = task.verify;
  const started = Date.now();
  const head = (await gitTry(cwd, ['rev-parse', 'HEAD'])).stdout.trim() || null;
  const run = verifyRunNumber(engine, task);
  engine.write(() =>
    appendEvent(engine.db, task.id, 'verify.started', { attempt: task.attempt, run, commands: commands.length, commit: head }),
  );
  const results: VerifyCommandOutcome[] = [];
  const logParts: string[] = [];
  const timeoutMs = engine.config.verify.timeout_s * 1000;
  for (let i = 0; i < commands.length && !signal.aborted; i++) {
    const command = commands[i];
    const r = await runBounded(command, {
      cwd,
      env: commandEnv({ ...env, ...treeMarkerEnv(engine.home.root, task.id, task.attempt) }),
      timeoutMs,
      signal,
      graceMs: Math.min(engine.config.scheduler.kill_grace_ms, 5000),
      tailBytes: VERIFY_TAIL_BYTES,
      // Recorded on the task like a worker's pid: a leader that takes over kills it if we die.
      onSpawn: (pid, pidStart) => engine.write(() => updateRunFields(engine.db, task, { pid, pidStart })),
    });
    const outputTail = redactText(r.spawnError ? `${r.tail}\ncould not start: ${r.spawnError}` : r.tail);
    const exitCode = r.timedOut || r.aborted ? null : r.exitCode;
    const outcome: VerifyCommandOutcome = { command, exitCode, durationMs: r.durationMs, outputTail, timedOut: r.timedOut };
    results.push(outcome);
    logParts.push(
      `$ ${Array.isArray(command) ? JSON.stringify(command) : command}\n${r.output}\n[exit ${exitCode ?? (r.timedOut ? 'timeout' : (r.signal ?? 'none'))}, ${r.durationMs} ms]\n`,
    );
    engine.write(() =>
      appendEvent(engine.db, task.id, 'verify.command', {
        attempt: task.attempt,
        run,
        index: i,
        command,
        exitCode,
        signal: r.signal,
        durationMs: r.durationMs,
        timedOut: r.timedOut,
        aborted: r.aborted,
        outputTail,
      }),
    );
    if (exitCode !== 0) break;
  }
  const ok = !signal.aborted && results.length === commands.length && results.every((r) => r.exitCode === 0);
  let log: string | null = null;
  if (commands.length) {
    log = join(engine.home.artifacts, task.id, `verify-${task.attempt}-${run}.log`);
    mkdirPrivate(dirname(log));
    writeFileSync(log, redactText(logParts.join('\n')), { mode: PRIVATE_FILE });
  }
  engine.write(() => {
    if (getAllocation(engine.db, task.id)?.state === 'ready') setVerifyOutcome(engine.db, task.id, ok, head);
    appendEvent(engine.db, task.id, 'verify.completed', {
      attempt: task.attempt,
      run,
      ok,
      commit: head,
      durationMs: Date.now() - started,
      ran: results.length,
      of: commands.length,
      aborted: signal.aborted,
      log,
    });
  });
  return { ok, results, log };
}

/** 1 for the first verification of this attempt, 2 after one auto-repair, … */
function verifyRunNumber(engine: EngineContext, task: Task): number {
  const { events } = listEvents(engine.db, { taskId: task.id, types: ['verify.started'], limit: 5000 });
  return events.filter((e) => e.payload.attempt === task.attempt).length + 1;
}

/** The latest `verify.completed` of the task's current attempt, if any. */
export function lastVerifyOutcome(engine: EngineContext, task: Task): { ok: boolean; commit: string | null } | null {
  const { events } = listEvents(engine.db, { taskId: task.id, types: ['verify.completed'], limit: 5000 });
  const mine = events.filter((e) => e.payload.attempt === task.attempt);
  const last = mine[mine.length - 1];
  return last ? { ok: last.payload.ok === true, commit: (last.payload.commit as string | null) ?? null } : null;
}

/** The verification outcome of the task's recorded head: the worktree row's when set, else the events'. */
export function verifiedOutcome(engine: EngineContext, task: Task, alloc: { verifyOk: boolean | null; verifiedCommit: string | null }): { ok: boolean; commit: string | null } | null {
  return alloc.verifyOk !== null ? { ok: alloc.verifyOk, commit: alloc.verifiedCommit } : lastVerifyOutcome(engine, task);
}
