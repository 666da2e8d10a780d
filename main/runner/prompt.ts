// The prompt protocol lives with the Cache Lab (main/cachelab/prompt.ts); the runner builds prompts here.
export { buildPrompt, buildRepairPrompt, PROMPT_PROTOCOL, type BuiltPrompt, type PromptOptions } from '../cachelab/prompt.js';

/**
 * The first turn of a resumed attempt (`retry --strategy resume`), sent into the worker's own session:
 * the session already holds the task and the work so far, so this only says what happened.
 */
export function buildResumePrompt(opts: { interruptedBy: string; kind: string }): string {
  const why =
    opts.interruptedBy === 'shutdown'
      ? 'LightWorker was shut down'
      : opts.interruptedBy === 'timed_out'
        ? 'the task hit its time limit'
        : 'the LightWorker process running it stopped';
  const kept = opts.kind === 'execute' ? ' Your changes so far are still in this worktree, on the same branch.' : '';
  return `Your previous turn on this task was interrupted before it finished (${why}); its processes were stopped.${kept} Continue where you left off: check what is already done, finish the task, then answer with the result contract.\n`;
}

/** Appended to a fresh prompt when an interrupted attempt cannot be continued in its own session. */
export function freshAfterInterruptNote(kind: string): string {
  return kind === 'execute'
    ? '\n\n# Note\nAn earlier attempt of this task was interrupted. Its changes are kept in this worktree: check them and continue from them rather than starting over.\n'
    : '\n\n# Note\nAn earlier attempt of this task was interrupted before it finished.\n';
}

/** The next turn of a follow-up (`lightworker followup`), sent into the worker's own session. */
export function buildFollowUpPrompt(opts: { message: string; kind: string }): string {
  const kept = opts.kind === 'execute' ? ' Your earlier changes are committed on this worktree\'s branch; build on them.' : '';
  return `Follow-up on this task.${kept} When you are done, answer again with the result contract.\n\n# Message\n${opts.message}\n`;
}

/** Appended to a fresh prompt when a follow-up cannot continue the previous session (another worker, no session). */
export function freshFollowUpNote(opts: { message: string; previous: string; kind: string }): string {
  const kept = opts.kind === 'execute' ? '\nThe earlier attempt\'s changes are committed in this worktree, on the task branch: build on them rather than starting over.' : '';
  return `\n\n# Earlier attempt\n${opts.previous}${kept}\n\n# Follow-up message\n${opts.message}\n`;
}

/** Sent into the session when a person replaced the objective (`lightworker redirect`). */
export function buildRedirectPrompt(objective: string): string {
  return `A person changed the objective of this task. Work toward the new objective from where you are; when done, answer with the result contract.\n\n# New objective\n${objective}\n`;
}
