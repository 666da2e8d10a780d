import type { Task } from '../tasks/types.js';
import type { TurnAuth } from './credentials.js';

/**
 * A worker adapter knows one agent CLI: how to detect it, how to build argv + env for a turn, and how
 * to read its JSON event stream. Spawning, killing, timeouts, worktrees and persistence are the
 * runner's, written once (main/runner/).
 */
export interface WorkerAdapter {
  /** Worker name as tasks name it: `codex`, `claude-code`, `opencode`, `mock`, or a linked name. */
  readonly name: string;
  /** Most turns of this worker running at once on this machine. */
  readonly maxConcurrency: number;
  /** False when a turn cannot continue a native session (a linked CLI without a resume template). */
  readonly resumable?: boolean;
  /** True when the CLI can ask LightWorker's permission tool (WorkerTurn.permissionServer) mid-turn. */
  readonly permissionTool?: boolean;
  /**
   * True when a read-only turn of `task` runs under a read-only sandbox the CLI itself enforces (nothing
   * it runs can write the workspace, whatever the model asks), so the task may run in the user's
   * checkout. Absent or false: the runner gives read-only tasks a disposable snapshot instead.
   */
  confinesReadOnly?(task: Task): boolean;
  /**
   * Never runs a model: looks for the binary, its version, credentials where knowable. `command`: the
   * configured argv of a built-in CLI (`[workers.<name>] command`) instead of the binary found by name.
   */
  detect(command?: readonly string[] | null): Promise<WorkerInfo>;
  /** argv + env for one turn (a first turn, or a follow-up when `turn.resumeSessionId` is set). */
  buildSpawn(turn: WorkerTurn): Promise<SpawnSpec>;
  /** A parser for this turn's stdout, fed one line at a time. */
  createParser(turn: WorkerTurn): StreamParser;
}

export interface WorkerInfo {
  name: string;
  installed: boolean;
  version: string | null;
  /**
   * "version unknown: <why>" when `version` is null although the worker is there: a linked CLI whose link
   * names no version command (looking at a worker never runs an agent turn), a probe that failed or is
   * still running.
   */
  versionNote?: string;
  /** null when the adapter cannot tell without calling a model. */
  authenticated: boolean | null;
  capabilities: { sessions: boolean; structuredOutput: boolean; sandboxModes: string[] };
  /** Why the worker cannot be used, when it cannot. */
  reason: string | null;
  /** Path of the binary used. */
  command: string | null;
  /** ACP workers: the protocol version, how follow-ups continue and the auth methods the agent's initialize named. */
  acp?: string;
  /**
   * What a turn would authenticate with, when the adapter knows better than the shared lookup: an ACP agent
   * runs with its own config home, so only its key variables (or a routed gateway) reach it, never your login.
   */
  auth?: { mode: string; source: string; ok: boolean; hint: string | null };
}

/** A gateway as a worker needs it: where to send requests and which env var holds the key. */
export interface GatewayRoute {
  name: string;
  baseUrl: string;
  keyEnv: string;
  /** The key value, read by the runner from its own environment; passed to the worker only. */
  key: string | null;
  wireApi?: 'responses' | 'messages' | 'chat';
  /** How the key is sent; undefined: the worker's native style (Claude Code x-api-key, others Bearer). */
  authStyle?: 'bearer' | 'x-api-key';
  /** Our model name → the provider's. */
  modelMap?: Record<string, string>;
}

export interface WorkerTurn {
  /** The task with the caller's real (unredacted) text. */
  task: Task;
  /** The full prompt for this turn (stable prefix first; see the prompt protocol). */
  prompt: string;
  /** Where the worker runs: the task's worktree for execute, the workspace for read-only kinds. */
  workdir: string;
  sandbox: 'read-only' | 'workspace-write';
  /** JSON Schema of the final answer, or null when free text is acceptable. */
  resultSchema: Record<string, unknown> | null;
  /** Native session to continue (auto-repair follow-ups, resumed turns). */
  resumeSessionId: string | null;
  /** Private scratch folder for this attempt: isolated CLI config homes, last message. */
  runDir: string;
  /**
   * A folder every turn of this home shares, for read-only files an adapter can reuse by content (a
   * result schema named by its hash); unset: the adapter writes them into runDir.
   */
  shareDir?: string;
  model: string | null;
  reasoningEffort: Task['reasoningEffort'];
  gateway: GatewayRoute | null;
  /** The minimal environment every worker starts from (PATH, HOME, locale, LIGHTWORKER_DEPTH…). */
  baseEnv: Record<string, string>;
  /** Built-in CLIs: the configured binary + leading args (`[workers.<name>] command`); unset: found by name. */
  command?: readonly string[] | null;
  /** How to start the MCP server that answers this turn's permission prompts (adapters with permissionTool). */
  permissionServer?: { command: string; args: string[]; env: Record<string, string> };
  /** What the worker authenticates with (main/workers/credentials.ts); absent: auto, from this process's env. */
  auth?: TurnAuth;
  /** A resumed turn: the session's totals recorded by its last turn (the runner reads them from the log). */
  threadUsage?: ThreadUsage | null;
}

/** A session's token totals as its CLI last reported them (Codex reports them cumulative across `exec resume`). */
export interface ThreadUsage {
  thread: string;
  input: number;
  cached: number;
  output: number;
}

export interface SpawnSpec {
  command: string;
  args: string[];
  /** The complete environment of the child (nothing else is inherited). */
  env: Record<string, string>;
  cwd: string;
  /**
   * Written to the child's stdin, which is then closed: how the prompt reaches a CLI. Never argv, which
   * every local user can read (/proc/<pid>/cmdline, ps). Unset: stdin is closed.
   */
  stdin?: string;
  /** Something the user should know about how this turn runs (recorded as a `worker.warning` event). */
  warning?: string;
  /** Called once the turn's process tree has ended: removes staged credentials (writing a refreshed login back). */
  release?: () => void;
}

export type NormalizedEvent =
  | { type: 'worker.started'; sessionId: string | null; model?: string | null }
  | { type: 'worker.message'; text: string }
  | { type: 'worker.tool'; name: string; status: 'started' | 'completed' | 'failed'; input?: unknown; output?: string }
  | {
      type: 'worker.usage';
      inputTokens: number;
      cachedTokens: number;
      outputTokens: number;
      model?: string | null;
      costUsd?: number | null;
      /** CLIs whose usage is cumulative per session (Codex): the session and its totals so far, for the next turn. */
      thread?: ThreadUsage;
    }
  | { type: 'worker.completed'; text: string | null }
  | { type: 'worker.failed'; message: string; rateLimited?: boolean }
  | { type: 'worker.warning'; message: string }
  /** An agent's plan as it stands (ACP agents report one and update it as entries complete). */
  | { type: 'worker.plan'; entries: { content: string; status: string; priority: string }[] };

export interface TurnOutcome {
  ok: boolean;
  /** The worker's final answer text (JSON for structured results). */
  finalText: string | null;
  sessionId: string | null;
  error?: { code: 'worker_failed' | 'rate_limited'; message: string };
}

export interface StreamParser {
  /** One stdout line (without the newline). Returns the normalized events it carries. */
  line(line: string): NormalizedEvent[];
  /** The process exited: the final outcome, given the exit code and the tail of stderr. */
  finish(exitCode: number | null, stderrTail: string): TurnOutcome | Promise<TurnOutcome>;
}

/** Text that marks a provider rate limit or quota problem (admission control). */
export const RATE_LIMIT_PATTERN = /\b429\b|rate[ _-]?limit|too many requests|quota|insufficient_quota|overloaded_error/i;
