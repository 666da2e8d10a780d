import type { NormalizedEvent } from '../adapter.js';

/**
 * What the ACP driver (driver.ts) is told on its stdin for one turn. It carries the agent's environment
 * (a gateway key may be in it), so it never goes on argv, which every local user can read.
 */
export interface DriverSpec {
  /** The ACP agent: binary, arguments and its complete environment. */
  agent: { command: string; args: string[]; env: Record<string, string> };
  /** The task's boundary: where the session runs and the only tree fs/terminal methods serve. */
  cwd: string;
  prompt: string;
  sandbox: 'read-only' | 'workspace-write';
  /** Globs (relative to cwd) writes must match, when the task names any. */
  allowedPaths: string[];
  /** The session to continue (session/load or session/resume), or null for a new one. */
  resumeSessionId: string | null;
  /** This attempt's scratch folder: the session notes for agents that cannot load a session. */
  runDir: string;
  model: string | null;
  /** Offer fs/read_text_file (false for agents that mistake its not-found error for a failure: Gemini CLI 0.61). */
  serveReads: boolean;
  /** False: never session/load (the agent's load is broken): a fresh session carries the earlier ask and answer. */
  loadSession?: boolean;
  /** Keep the agent's input open this long after a turn (it finishes writing its session). */
  settleMs?: number;
  /** Session mode ids to select when the agent offers them, best first (auto-accept edits for workspace-write). */
  modes: string[];
  /** `lightworker mcp --permission-for <task>`: decides session/request_permission; absent: every ask is refused. */
  permission?: { command: string; args: string[]; env: Record<string, string> };
}

/** Lines the driver prints on stdout: normalized events, plus its own end-of-turn record. */
export type DriverLine =
  | NormalizedEvent
  | { type: 'acp.end'; sessionId: string | null; stopReason: string; text: string | null; interrupted: boolean }
  | { type: 'acp.error'; message: string; rateLimited: boolean };
