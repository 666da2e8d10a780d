import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../core/errors.js';
import type { NormalizedEvent, StreamParser, TurnOutcome, WorkerAdapter, WorkerInfo, WorkerTurn } from './adapter.js';
import { RATE_LIMIT_PATTERN } from './adapter.js';
import { claudeCodeAdapter } from './claude-code.js';
import { codexAdapter } from './codex.js';

/**
 * The `vscode` worker: a turn run by the Claude Code or Codex extension's CLI inside VS Code, through
 * the LightWorker Bridge extension (vscode-extension/). The spawned process is vscode-client.mjs, so
 * timeouts and cancel work as for any worker: killing it cancels the turn in the editor. The bridge
 * streams the agent's own JSON lines; this adapter reads them with the claude-code / codex parsers.
 *
 * Which bridge: `[workers.vscode] bridge = "<discovery file>"`, else the files in
 * `$LIGHTWORKER_VSCODE_BRIDGE_DIR` or `~/.lightworker/vscode-bridge/` whose editor is alive, preferring
 * the window that has the task's repository open. Which agent: `task.metadata.vscode.agent`, else
 * `[workers.vscode] agent`, else the bridge's first runnable one (Claude Code, then Codex).
 */
const CLIENT = fileURLToPath(new URL('./vscode-client.mjs', import.meta.url));
const FORWARDED_ENV = ['LIGHTWORKER_TASK_ID', 'LIGHTWORKER_ATTEMPT', 'LIGHTWORKER_HOME_ID', 'LIGHTWORKER_DEPTH'];

export type VscodeAgent = 'claude-code' | 'codex';

export interface VscodeWorkerConfig {
  bridge?: string;
  agent?: VscodeAgent;
  max_concurrency?: number;
}

interface Discovery {
  path: string;
  pid: number;
  port: number;
  token: string;
  workspaceFolders: string[];
  startedAt: string;
  extensionVersion: string;
}

export function bridgeDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIGHTWORKER_VSCODE_BRIDGE_DIR || join(homedir(), '.lightworker', 'vscode-bridge');
}

function readDiscovery(path: string): Discovery | null {
  try {
    const r = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    if (typeof r.port !== 'number' || typeof r.token !== 'string' || typeof r.pid !== 'number') return null;
    const folders = Array.isArray(r.workspace_folders) ? r.workspace_folders.filter((f): f is string => typeof f === 'string') : [];
    return { path, pid: r.pid, port: r.port, token: r.token, workspaceFolders: folders, startedAt: String(r.started_at ?? ''), extensionVersion: String(r.extension_version ?? '') };
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const contains = (folder: string, path: string) => {
  const rel = relative(folder, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/**
 * The bridge to use: the configured discovery file, else the live bridge whose window has `workspace`
 * open (the newest when several), else the newest live bridge. Null when none is running.
 */
export function findBridge(config: VscodeWorkerConfig, workspace: string | null, env: NodeJS.ProcessEnv = process.env): Discovery | null {
  if (config.bridge) return readDiscovery(config.bridge);
  const dir = bridgeDir(env);
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json'));
  } catch {
    return null;
  }
  const live = names.map((n) => readDiscovery(join(dir, n))).filter((d): d is Discovery => d !== null && alive(d.pid));
  live.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  return (workspace ? live.find((d) => d.workspaceFolders.some((f) => contains(f, workspace))) : undefined) ?? live[0] ?? null;
}

function getJson(d: Discovery, path: string, timeoutMs = 2000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: d.port, path, method: 'GET', timeout: timeoutMs, headers: { authorization: `Bearer ${d.token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        try {
          const body = JSON.parse(text) as Record<string, unknown>;
          if (res.statusCode === 200) resolve(body);
          else reject(new Error(`HTTP ${res.statusCode}: ${JSON.stringify(body.error ?? body)}`));
        } catch {
          reject(new Error(`HTTP ${res.statusCode}: not JSON`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

function agentOf(turn: WorkerTurn, config: VscodeWorkerConfig): VscodeAgent | null {
  const meta = (turn.task.metadata.vscode ?? {}) as { agent?: unknown };
  if (meta.agent === 'claude-code' || meta.agent === 'codex') return meta.agent;
  if (meta.agent !== undefined) throw new AppError('invalid_input', 'metadata.vscode.agent: must be claude-code or codex', { field: 'metadata.vscode.agent' });
  return config.agent ?? null;
}

/**
 * Reads the client's stdout: bridge events wrapping the agent's own JSON lines, which go to the
 * claude-code or codex parser chosen by the `turn.started` event.
 */
function createParser(turn: WorkerTurn): StreamParser {
  let inner: StreamParser | null = null;
  let agentExit: number | null = null;
  let exited: { cancelled: boolean; reason: string | null } | null = null;
  let bridgeError: string | null = null;
  // The agent's stderr reaches us inside the stream (the client's own stderr is empty): keep a tail.
  let agentStderr = '';
  return {
    line(line: string): NormalizedEvent[] {
      const e = JSON.parse(line) as Record<string, unknown>;
      if (e.type === 'turn.started') {
        inner = (e.agent === 'codex' ? codexAdapter : claudeCodeAdapter).createParser(turn);
        return [{ type: 'worker.tool', name: 'vscode.turn', status: 'started', input: { agent: e.agent, pid: e.pid, cli: e.cli } }];
      }
      if (e.type === 'stdout' && inner && typeof e.line === 'string') {
        try {
          return inner.line(e.line);
        } catch {
          return [{ type: 'worker.message', text: e.line.slice(0, 4000) }];
        }
      }
      if (e.type === 'stderr' && typeof e.text === 'string') agentStderr = (agentStderr + e.text).slice(-4000);
      if (e.type === 'turn.exited') {
        agentExit = typeof e.code === 'number' ? e.code : null;
        exited = { cancelled: e.cancelled === true, reason: typeof e.reason === 'string' ? e.reason : null };
        const output = exited.cancelled ? `cancelled: ${exited.reason}` : (exited.reason ?? `exit ${agentExit ?? String(e.signal)}`);
        return [{ type: 'worker.tool', name: 'vscode.turn', status: agentExit === 0 && !exited.cancelled ? 'completed' : 'failed', output }];
      }
      if (e.type === 'bridge.error') {
        bridgeError = String(e.message);
        return [{ type: 'worker.failed', message: bridgeError, rateLimited: false }];
      }
      return [];
    },
    async finish(exitCode, stderrTail): Promise<TurnOutcome> {
      if (bridgeError !== null) return { ok: false, finalText: null, sessionId: null, error: { code: 'worker_failed', message: bridgeError } };
      if (!inner) {
        const message = `vscode bridge client exited with code ${exitCode} before the turn started${stderrTail.trim() ? `: ${stderrTail.trim().slice(-500)}` : ''}`;
        return { ok: false, finalText: null, sessionId: null, error: { code: 'worker_failed', message } };
      }
      const outcome = await (inner as StreamParser).finish(agentExit ?? exitCode, stderrTail.trim() ? stderrTail : agentStderr);
      const ended = exited as { cancelled: boolean; reason: string | null } | null;
      if (ended?.cancelled && outcome.ok) return { ...outcome, ok: false, error: { code: 'worker_failed', message: `the turn was cancelled in the editor (${ended.reason})` } };
      if (!outcome.ok && outcome.error && ended?.reason && !ended.cancelled) outcome.error.message += ` (${ended.reason})`;
      if (outcome.error) outcome.error.code = RATE_LIMIT_PATTERN.test(outcome.error.message) ? 'rate_limited' : outcome.error.code;
      return outcome;
    },
  };
}

/** The `vscode` adapter with `[workers.vscode]` applied (config.toml). */
export function vscodeAdapter(config: VscodeWorkerConfig = {}): WorkerAdapter {
  return {
    name: 'vscode',
    maxConcurrency: config.max_concurrency ?? 2,
    async detect(): Promise<WorkerInfo> {
      const capabilities = { sessions: true, structuredOutput: false, sandboxModes: ['read-only', 'workspace-write'] };
      const base = { name: 'vscode', authenticated: null, capabilities };
      const d = findBridge(config, null);
      if (!d) {
        const where = config.bridge ?? bridgeDir();
        return { ...base, installed: false, version: null, command: null, reason: `no running VS Code bridge (${where}): install vscode-extension/*.vsix in VS Code and open a window` };
      }
      const url = `http://127.0.0.1:${d.port}`;
      try {
        const { agents } = (await getJson(d, '/v1/agents')) as { agents: { agent: string | null; runnable: boolean }[] };
        const runnable = agents.filter((a) => a.runnable && a.agent).map((a) => a.agent);
        const reason = runnable.length ? null : 'the editor has no Claude Code or Codex extension with a usable CLI';
        return { ...base, installed: true, version: d.extensionVersion || null, command: url, reason };
      } catch (err) {
        return { ...base, installed: false, version: null, command: url, reason: `VS Code bridge ${url} (${d.path}) is not answering: ${(err as Error).message}` };
      }
    },
    async buildSpawn(turn: WorkerTurn) {
      const d = findBridge(config, turn.task.workspace);
      if (!d) throw new AppError('worker_missing', `no running VS Code bridge found (${config.bridge ?? bridgeDir()}); open VS Code with the LightWorker Bridge extension`);
      const env: Record<string, string> = {};
      for (const k of FORWARDED_ENV) if (turn.baseEnv[k]) env[k] = turn.baseEnv[k];
      const body = { agent: agentOf(turn, config), prompt: turn.prompt, cwd: turn.workdir, sandbox: turn.sandbox, session_id: turn.resumeSessionId, model: turn.model, env };
      mkdirSync(turn.runDir, { recursive: true });
      const requestFile = join(turn.runDir, 'vscode-turn.json');
      writeFileSync(requestFile, JSON.stringify(body), { mode: 0o600 });
      return { command: process.execPath, args: [CLIENT, '--discovery', d.path, '--request', requestFile], env: turn.baseEnv, cwd: turn.workdir };
    },
    createParser,
  };
}
