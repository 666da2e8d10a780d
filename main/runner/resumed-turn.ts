import type { EngineContext } from '../tasks/engine-context.js';
import { appendEvent } from '../store/events.js';
import { runDirOfSession } from '../store/task-history.js';
import { followUpKey } from '../tasks/followup.js';
import { unsealText } from '../tasks/secrets.js';
import type { ResumeRequest } from '../tasks/ops.js';
import type { WorkerAdapter, WorkerTurn } from '../workers/adapter.js';
import { buildFollowUpPrompt, buildResumePrompt, freshAfterInterruptNote, freshFollowUpNote } from './prompt.js';

/**
 * The first turn of a resumed attempt: a follow-up in the interrupted native session when the worker
 * can continue one, else the task's fresh prompt with a note; either way a `task.resumed` event says which.
 */
export function resumedTurn(engine: EngineContext, adapter: WorkerAdapter, base: WorkerTurn, resume: ResumeRequest, keptWorktree: boolean): WorkerTurn {
  const { task } = base;
  const followUp = resume.followUp;
  const why = followUp?.fromWorker
    ? `handed over from worker ${followUp.fromWorker}`
    : !resume.sessionId
      ? `the ${followUp ? 'previous' : 'interrupted'} attempt never reported a session`
      : adapter.resumable === false
        ? `worker ${adapter.name} cannot continue a session (no resume template)`
        : null;
  engine.write(() =>
    appendEvent(engine.db, task.id, 'task.resumed', {
      mode: why ? 'fresh' : 'session',
      sessionId: why ? null : resume.sessionId,
      fromAttempt: resume.fromAttempt,
      interruptedBy: resume.interruptedBy,
      workdir: base.workdir,
      keptWorktree,
      ...(followUp ? { followUp: true, by: followUp.by } : {}),
      ...(why ? { reason: `${why}; starting a fresh session${keptWorktree ? ' in the same worktree' : ''}` } : {}),
    }),
  );
  if (why && followUp) {
    const message = unsealText(engine.db, task.id, followUpKey(task.attempt), followUp.message);
    return { ...base, prompt: base.prompt + freshFollowUpNote({ message, previous: followUp.previous, kind: task.kind }) };
  }
  if (why) return { ...base, prompt: base.prompt + freshAfterInterruptNote(task.kind) };
  // The CLI keeps the session in the config home of the turn that started it: continue it there.
  const session = { resumeSessionId: resume.sessionId, runDir: sessionRunDir(engine, task.id, resume.sessionId!) ?? base.runDir };
  if (followUp) {
    const message = unsealText(engine.db, task.id, followUpKey(task.attempt), followUp.message);
    return { ...base, ...session, prompt: buildFollowUpPrompt({ message, kind: task.kind }) };
  }
  return { ...base, ...session, prompt: buildResumePrompt({ interruptedBy: resume.interruptedBy, kind: task.kind }) };
}

/** The runDir of the turn that started (or last ran) a native session: where the CLI keeps it. */
function sessionRunDir(engine: EngineContext, taskId: string, sessionId: string): string | null {
  return runDirOfSession(engine.db, taskId, sessionId);
}
