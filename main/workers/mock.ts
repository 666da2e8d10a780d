import { fileURLToPath } from 'node:url';
import { RATE_LIMIT_PATTERN, type NormalizedEvent, type StreamParser, type WorkerAdapter, type WorkerInfo, type WorkerTurn } from './adapter.js';

/**
 * The deterministic `mock` worker, for tests and demos. Scripted by `task.metadata.mock`:
 * - `sleep_ms`, `exit_code`, `message`, `events` (extra raw mock events), `usage` {input, cached, output}
 * - `result` (any JSON: the final answer) or `text` (a plain-text final answer); by default a schema-valid
 *   answer for the kind (a plan: two explore steps on the objective, so a goal works with no script)
 * - `write_files` {relative path: content} written in the worker's cwd (the worktree for execute tasks)
 * - `grandchild` (spawn a grandchild that ignores SIGTERM; `grandchild_pidfile` records its pid),
 *   `ignore_sigterm`, `prompt_log` (append {session, resumed, prompt} as a JSON line), `output_mb` (print N MB of noise), `append_log` (append "task attempt pid"), `beat_log` (append "task attempt pid ms" every 50 ms while alive), `tick_ms` (a message event "tick ATTEMPT N" every N ms while alive)
 * - `background` (leave a child holding the worker's stdout/stderr after it exits, like a dev server;
 *   `background_pidfile`), `escape` (a SIGTERM-ignoring descendant in its own session, outside the
 *   process group, re-parented to init when the worker exits; `escape_pidfile`). Each spawn is also
 *   reported as a `worker.tool` event (`spawn` for the grandchild, `background`, `escape`) with its pid.
 * - `fail_message` (fail with this message), `rate_limit` (fail like a provider 429)
 * - `followup` {…}: overrides used on a resumed turn (auto-repair follow-ups)
 * - `by_kind` {kind: {…}}, `by_model` {model: {…}}, `when` [{prompt_includes, …}]: overrides by the
 *   task's kind, its routed model, or text in the prompt (scripts a team: implementer, reviewer, judge)
 */
const AGENT = fileURLToPath(new URL('./mock-agent.mjs', import.meta.url));

export const mockAdapter: WorkerAdapter = {
  name: 'mock',
  maxConcurrency: 64,
  // The mock writes nothing into its working directory but what `write_files` names: without it, a
  // read-only task cannot change the checkout; with it (write-capable), it runs in a snapshot.
  confinesReadOnly: (task) => !((task.metadata.mock ?? {}) as Record<string, unknown>).write_files,
  async detect(): Promise<WorkerInfo> {
    return {
      name: 'mock',
      installed: true,
      version: '1.0.0',
      authenticated: true,
      capabilities: { sessions: true, structuredOutput: true, sandboxModes: ['read-only', 'workspace-write'] },
      reason: null,
      command: process.execPath,
    };
  },
  async buildSpawn(turn: WorkerTurn) {
    const spec = (turn.task.metadata.mock ?? {}) as Record<string, unknown>;
    const args = [AGENT, '--spec', JSON.stringify(spec), '--kind', turn.task.kind];
    if (turn.resumeSessionId) args.push('--resume', turn.resumeSessionId);
    if (turn.model) args.push('--model', turn.model);
    // The objective and prompt on stdin, as every worker gets them: never argv, which any local user can read.
    return { command: process.execPath, args, env: turn.baseEnv, cwd: turn.workdir, stdin: JSON.stringify({ objective: turn.task.objective, prompt: turn.prompt }) };
  },
  createParser(): StreamParser {
    let sessionId: string | null = null;
    let finalText: string | null = null;
    let failure: string | null = null;
    return {
      line(line: string): NormalizedEvent[] {
        const e = JSON.parse(line) as Record<string, unknown>;
        switch (e.type) {
          case 'start':
            sessionId = String(e.session);
            return [{ type: 'worker.started', sessionId, model: (e.model as string) ?? null }];
          case 'message':
            return [{ type: 'worker.message', text: String(e.text) }];
          case 'tool':
            return [{ type: 'worker.tool', name: String(e.name), status: (e.status as 'completed') ?? 'completed', input: e.input, output: e.output as string | undefined }];
          case 'usage':
            return [{ type: 'worker.usage', inputTokens: Number(e.input) || 0, cachedTokens: Number(e.cached) || 0, outputTokens: Number(e.output) || 0, model: (e.model as string) ?? null }];
          case 'final':
            finalText = String(e.text);
            return [{ type: 'worker.completed', text: finalText }];
          case 'error':
            failure = String(e.message);
            return [{ type: 'worker.failed', message: failure, rateLimited: RATE_LIMIT_PATTERN.test(failure) }];
          default:
            return [];
        }
      },
      finish(exitCode, stderrTail) {
        if (exitCode === 0 && failure === null) return { ok: true, finalText, sessionId };
        const message = failure ?? `mock exited with code ${exitCode}${stderrTail ? `: ${stderrTail.trim().slice(-500)}` : ''}`;
        return { ok: false, finalText, sessionId, error: { code: RATE_LIMIT_PATTERN.test(message) ? 'rate_limited' : 'worker_failed', message } };
      },
    };
  },
};
