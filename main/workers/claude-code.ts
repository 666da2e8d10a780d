import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  RATE_LIMIT_PATTERN, type NormalizedEvent, type SpawnSpec, type StreamParser, type TurnOutcome, type WorkerAdapter, type WorkerInfo, type WorkerTurn,
} from './adapter.js';
import { detectCli, requireCliCommand } from './cli-detect.js';
import { authOfTurn, stageLogin } from './credentials.js';
import { providerModel } from './routing.js';

/**
 * Claude Code (`claude -p --output-format stream-json --verbose`). HOME and CLAUDE_CONFIG_DIR point
 * under <runDir>/claude-home, so the user's ~/.claude (settings, MCP servers, transcripts) never
 * applies; `--strict-mcp-config` ignores any .mcp.json and `--setting-sources user` ignores project
 * settings (hooks) in the workspace. Follow-ups (`--resume`) must reuse the same runDir. Credentials
 * (credentials.ts): the user's .credentials.json staged in the config dir, or their key variables.
 *
 * Permission mode by sandbox: read-only → `default` with file-writing tools disallowed (in `-p`,
 * anything needing a prompt is denied); workspace-write → `acceptEdits`. A gateway is reached via
 * ANTHROPIC_BASE_URL (without /v1) and the gateway key as ANTHROPIC_API_KEY (x-api-key) or, for
 * `auth = "bearer"`, ANTHROPIC_AUTH_TOKEN (Authorization: Bearer), set for the child only.
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 stops every other lookup (10 DNS queries otherwise).
 */
const WRITE_TOOLS = ['Write', 'Edit', 'NotebookEdit'];

export function claudeHome(turn: WorkerTurn): string {
  return join(turn.runDir, 'claude-home');
}

const KEY_VARS = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN'];

async function buildSpawn(turn: WorkerTurn): Promise<SpawnSpec> {
  const cli = requireCliCommand('claude-code', 'claude', turn.command);
  const home = claudeHome(turn);
  const configDir = join(home, '.claude');
  mkdirSync(configDir, { recursive: true });
  const auth = authOfTurn('claude-code', turn);
  const env: Record<string, string> = {
    ...turn.baseEnv,
    HOME: home,
    CLAUDE_CONFIG_DIR: configDir,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_MAX_RETRIES: '2',
    API_TIMEOUT_MS: '120000',
  };
  for (const k of KEY_VARS) delete env[k];
  let release: (() => void) | undefined;
  if (auth.mode === 'login' && auth.loginFile) release = stageLogin(auth.loginFile, join(configDir, '.credentials.json'));
  if (auth.mode === 'env') Object.assign(env, auth.env);
  if (auth.baseUrls.ANTHROPIC_BASE_URL) env.ANTHROPIC_BASE_URL = auth.baseUrls.ANTHROPIC_BASE_URL;
  const gw = turn.gateway;
  if (gw) {
    env.ANTHROPIC_BASE_URL = gw.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    // Bearer-only endpoints (Anthropic-compatible providers) read ANTHROPIC_AUTH_TOKEN; Anthropic itself x-api-key.
    if (gw.key !== null) env[gw.authStyle === 'bearer' ? 'ANTHROPIC_AUTH_TOKEN' : 'ANTHROPIC_API_KEY'] = gw.key;
  }
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--strict-mcp-config', '--setting-sources', 'user', '--exclude-dynamic-system-prompt-sections'];
  if (turn.sandbox === 'read-only') args.push('--permission-mode', 'default', '--disallowedTools', ...WRITE_TOOLS);
  else args.push('--permission-mode', 'acceptEdits');
  const model = providerModel(turn);
  if (model) args.push('--model', model);
  if (turn.reasoningEffort) args.push('--effort', turn.reasoningEffort);
  if (turn.resumeSessionId) args.push('--resume', turn.resumeSessionId);
  if (turn.permissionServer) {
    args.push(...permissionArgs(turn));
    Object.assign(env, PERMISSION_SERVER_WAIT);
  }
  // The prompt on stdin (`-p` reads it there when no prompt argument is given): never argv, which any local user can read.
  return { command: cli.bin, args: [...cli.prefix, ...args], env, cwd: turn.workdir, release, stdin: turn.prompt };
}

/**
 * What would prompt a person in an interactive session goes to LightWorker instead: the turn's
 * --mcp-config starts `lightworker mcp --permission-for <task>` and --permission-prompt-tool names its
 * tool. An ask interrupts the turn; the answer comes back with --resume (requests/permission.ts).
 */
function permissionArgs(turn: WorkerTurn): string[] {
  const server = turn.permissionServer!;
  const file = join(turn.runDir, 'lightworker-permission-mcp.json');
  writeFileSync(file, JSON.stringify({ mcpServers: { [PERMISSION_SERVER]: { type: 'stdio', command: server.command, args: server.args, env: server.env } } }), { mode: 0o600 });
  return ['--mcp-config', file, '--permission-prompt-tool', `mcp__${PERMISSION_SERVER}__permission_prompt`];
}

const PERMISSION_SERVER = 'lightworker_permission';

/**
 * `claude -p` connects MCP servers in the background by default, so a model's first tool call can come
 * before the permission server answered tools/list, and Claude exits "… (passed via
 * --permission-prompt-tool) not found". MCP_CONNECTION_NONBLOCKING=0 makes it wait for the connection
 * before the first model request; MCP_TIMEOUT bounds that wait (and names the server when it fails).
 */
const PERMISSION_SERVER_WAIT = { MCP_CONNECTION_NONBLOCKING: '0', MCP_TIMEOUT: '60000' };

/** The cause, in words, when Claude ended because the permission server was not connected (null otherwise). */
function permissionServerMissing(turn: WorkerTurn, stderrTail: string): string | null {
  const said = /Error: MCP tool \S+ \(passed via --permission-prompt-tool\) not found[^\n]*/.exec(stderrTail)?.[0];
  if (!said || !turn.permissionServer) return null;
  const logs = join(claudeHome(turn), '.cache', 'claude-cli-nodejs');
  return `LightWorker's permission server (lightworker mcp --permission-for ${turn.task.id}) was not connected when Claude Code needed it: it did not answer within ${Number(PERMISSION_SERVER_WAIT.MCP_TIMEOUT) / 1000} s or it exited (Claude Code's MCP logs: ${logs}). Claude Code said: ${said}`;
}

function createParser(turn: WorkerTurn): StreamParser {
  let sessionId: string | null = turn.resumeSessionId;
  let model: string | null = turn.model;
  let started = false;
  let finalText: string | null = null;
  let failure: string | null = null;
  let lastRetry: string | null = null;
  let resultSeen = false;
  const toolNames = new Map<string, string>();

  function contentText(c: unknown): string {
    if (typeof c === 'string') return c;
    if (Array.isArray(c)) return c.map((b) => (b && typeof b === 'object' && 'text' in b ? String((b as { text: unknown }).text) : '')).join('');
    return '';
  }

  return {
    line(line: string): NormalizedEvent[] {
      const e = JSON.parse(line) as Record<string, unknown>;
      const out: NormalizedEvent[] = [];
      if (typeof e.session_id === 'string') sessionId = e.session_id;
      if (e.type === 'system' && e.subtype === 'init') {
        if (typeof e.model === 'string') model = e.model;
        if (!started) out.push({ type: 'worker.started', sessionId, model });
        started = true;
      } else if (e.type === 'system' && e.subtype === 'api_retry') {
        lastRetry = `API retry ${String(e.attempt)}/${String(e.max_retries)}: ${String(e.error_status ?? '')} ${String(e.error ?? '')}`.trim();
      } else if (e.type === 'assistant') {
        const msg = (e.message ?? {}) as Record<string, unknown>;
        for (const b of (msg.content ?? []) as Record<string, unknown>[]) {
          if (b.type === 'text' && typeof b.text === 'string') out.push({ type: 'worker.message', text: b.text });
          if (b.type === 'tool_use') {
            toolNames.set(String(b.id), String(b.name));
            out.push({ type: 'worker.tool', name: String(b.name), status: 'started', input: b.input });
          }
        }
      } else if (e.type === 'user') {
        const msg = (e.message ?? {}) as Record<string, unknown>;
        for (const b of (Array.isArray(msg.content) ? msg.content : []) as Record<string, unknown>[]) {
          if (b.type !== 'tool_result') continue;
          const name = toolNames.get(String(b.tool_use_id)) ?? 'tool';
          out.push({ type: 'worker.tool', name, status: b.is_error ? 'failed' : 'completed', output: contentText(b.content).slice(0, 4000) });
        }
      } else if (e.type === 'result') {
        resultSeen = true;
        const u = (e.usage ?? {}) as Record<string, number>;
        const cached = u.cache_read_input_tokens ?? 0;
        const input = (u.input_tokens ?? 0) + cached + (u.cache_creation_input_tokens ?? 0);
        const usageModel = Object.keys((e.modelUsage ?? {}) as object)[0] ?? model;
        if (input || u.output_tokens) {
          out.push({ type: 'worker.usage', inputTokens: input, cachedTokens: cached, outputTokens: u.output_tokens ?? 0, model: usageModel, costUsd: typeof e.total_cost_usd === 'number' ? e.total_cost_usd : null });
        }
        const text = typeof e.result === 'string' ? e.result : null;
        if (e.is_error || e.subtype !== 'success') {
          failure = text ?? `claude ended with ${String(e.subtype)}`;
          out.push({ type: 'worker.failed', message: failure, rateLimited: RATE_LIMIT_PATTERN.test(failure) || e.api_error_status === 429 });
        } else {
          finalText = text;
          out.push({ type: 'worker.completed', text });
        }
      }
      return out;
    },
    finish(exitCode, stderrTail): TurnOutcome {
      if (exitCode === 0 && failure === null && resultSeen) return { ok: true, finalText, sessionId };
      const tail = stderrTail.trim();
      const message = permissionServerMissing(turn, tail) ?? failure ?? `claude exited with code ${exitCode}${lastRetry ? ` after ${lastRetry}` : ''}${tail ? `: ${tail.slice(-500)}` : ''}`;
      return { ok: false, finalText, sessionId, error: { code: RATE_LIMIT_PATTERN.test(message) ? 'rate_limited' : 'worker_failed', message } };
    },
  };
}

function detect(command?: readonly string[] | null): Promise<WorkerInfo> {
  return detectCli('claude-code', 'claude', command, 'npm i -g @anthropic-ai/claude-code', { sessions: true, structuredOutput: false, sandboxModes: ['read-only', 'workspace-write'] });
}

export const claudeCodeAdapter: WorkerAdapter = { name: 'claude-code', maxConcurrency: 4, permissionTool: true, detect, buildSpawn, createParser };
