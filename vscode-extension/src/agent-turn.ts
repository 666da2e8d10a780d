import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AgentCli, AgentName } from './agents.js';
import { killTree } from './process-tree.js';

/** A delegated turn as LightWorker asks for it (validated by the server). */
export interface TurnRequest {
  agent: AgentName;
  prompt: string;
  cwd: string;
  sandbox: 'read-only' | 'workspace-write';
  sessionId: string | null;
  model: string | null;
  /** LightWorker's task marker (LIGHTWORKER_TASK_ID, …): its sweep then finds the agent's processes too. */
  env: Record<string, string>;
}

export type TurnEvent =
  | { type: 'turn.started'; turn_id: string; agent: AgentName; pid: number; cli: string }
  | { type: 'stdout'; line: string }
  | { type: 'stderr'; text: string }
  | { type: 'turn.exited'; turn_id: string; code: number | null; signal: string | null; cancelled: boolean; reason: string | null };

const CLAUDE_WRITE_TOOLS = ['Write', 'Edit', 'NotebookEdit'];

/** A model name the agent's vendor serves; others (routing defaults of another vendor) are left out. */
function modelFits(agent: AgentName, model: string): boolean {
  return agent === 'claude-code' ? /^(claude|opus|sonnet|haiku)/i.test(model) : /^(gpt|o\d|codex)/i.test(model);
}

/**
 * The agent CLI's own argv for one non-interactive turn with JSON output (the same flags LightWorker's
 * claude-code and codex adapters use, minus their isolated homes: in the editor the user's own login
 * and settings apply).
 */
export function buildAgentArgs(req: TurnRequest): string[] {
  const model = req.model && modelFits(req.agent, req.model) ? req.model : null;
  if (req.agent === 'claude-code') {
    const args = ['-p', '--output-format', 'stream-json', '--verbose'];
    if (req.sandbox === 'read-only') args.push('--permission-mode', 'default', '--disallowedTools', ...CLAUDE_WRITE_TOOLS);
    else args.push('--permission-mode', 'acceptEdits');
    if (model) args.push('--model', model);
    if (req.sessionId) args.push('--resume', req.sessionId);
    return [...args, '--', req.prompt];
  }
  const args = ['exec', '--json', '--skip-git-repo-check', '--sandbox', req.sandbox, '-C', req.cwd];
  if (model) args.push('-m', model);
  if (req.sessionId) args.push('resume', req.sessionId);
  return [...args, req.prompt];
}

/**
 * The editor's environment for the agent (its login, PATH), without the editor's own plumbing
 * (VSCODE_*, ELECTRON_*), plus LightWorker's marker.
 */
function agentEnv(cli: AgentCli, extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(VSCODE_|ELECTRON_)/.test(k)) env[k] = v;
  // A `.js` CLI runs under the editor's binary, which is Node only with this set.
  if (cli.prefix.length) env.ELECTRON_RUN_AS_NODE = '1';
  return { ...env, ...extra };
}

/**
 * One running agent process: its own process group, stdout split into lines, a tree kill on cancel
 * and at every end (nothing it started outlives the turn).
 */
export class AgentTurn {
  readonly id = randomUUID();
  private child: ChildProcess | null = null;
  private cancelReason: string | null = null;
  private ended: Promise<void> | null = null;

  constructor(
    readonly request: TurnRequest,
    private readonly cli: AgentCli,
    private readonly emit: (e: TurnEvent) => void,
    private readonly graceMs = 2000,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Spawn and stream; resolves when the agent exited and its tree is gone. */
  run(): Promise<void> {
    if (this.cancelReason !== null) {
      // Cancelled before it started: nothing to spawn.
      this.emit({ type: 'turn.exited', turn_id: this.id, code: null, signal: null, cancelled: true, reason: this.cancelReason });
      return Promise.resolve();
    }
    const args = [...this.cli.prefix, ...buildAgentArgs(this.request)];
    const child = spawn(this.cli.command, args, { cwd: this.request.cwd, env: agentEnv(this.cli, this.request.env), detached: process.platform !== 'win32', stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.ended = new Promise<void>((resolve) => {
      let buf = '';
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line.trim()) this.emit({ type: 'stdout', line });
        }
      });
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (text: string) => this.emit({ type: 'stderr', text: text.slice(-4000) }));
      let finished = false;
      const finish = async (code: number | null, sig: string | null, reason: string | null) => {
        if (finished) return;
        finished = true;
        if (buf.trim()) this.emit({ type: 'stdout', line: buf });
        buf = '';
        if (child.pid) await killTree(child.pid, this.graceMs);
        this.emit({ type: 'turn.exited', turn_id: this.id, code, signal: sig, cancelled: this.cancelReason !== null, reason: this.cancelReason ?? reason });
        resolve();
      };
      child.once('error', (err) => void finish(null, null, `cannot start ${this.cli.command}: ${err.message}`));
      child.once('exit', (code, sig) => void finish(code, sig, null));
    });
    if (child.pid) this.emit({ type: 'turn.started', turn_id: this.id, agent: this.request.agent, pid: child.pid, cli: this.cli.command });
    return this.ended;
  }

  /**
   * Kill the whole tree now (works from the first moment of the first turn: no session id needed).
   * True once the agent has exited; false if it still had not a few seconds after SIGKILL.
   */
  async cancel(reason: string): Promise<boolean> {
    this.cancelReason ??= reason;
    const pid = this.child?.pid;
    if (pid && this.child!.exitCode === null && this.child!.signalCode === null) await killTree(pid, this.graceMs);
    if (!this.ended) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 5000)));
    const ended = await Promise.race([this.ended.then(() => true), late]);
    clearTimeout(timer);
    return ended;
  }
}
