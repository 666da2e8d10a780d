import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  RATE_LIMIT_PATTERN, type NormalizedEvent, type SpawnSpec, type StreamParser, type TurnOutcome, type WorkerAdapter, type WorkerInfo, type WorkerTurn,
} from './adapter.js';
import { detectCli, requireCliCommand } from './cli-detect.js';
import { authOfTurn, stageLogin, stageSecretFile } from './credentials.js';
import { providerModel } from './routing.js';

/**
 * OpenCode (`opencode run --format json`, `--session` for follow-ups). HOME and XDG_* point under
 * <runDir>/opencode-home (sessions live there: follow-ups must reuse the runDir); the whole config
 * comes from OPENCODE_CONFIG_CONTENT, so the user's opencode.json, MCP servers and plugins never
 * apply. A gateway becomes an `@ai-sdk/openai-compatible` provider (Chat Completions, bundled) whose
 * key is staged in the isolated auth.json for the turn (not in any environment a tool sees);
 * npm_config_registry points at a closed loopback port so the startup plugin lookup neither leaves the
 * machine nor reaches the model gateway. Permissions by sandbox: read-only denies edit and bash;
 * workspace-write allows both. Reasoning effort is passed as `--variant`. Credentials: credentials.ts
 * (the user's auth.json staged for the turn, or their key variables).
 */
const PROVIDER = 'lightworker';

export function opencodeHome(turn: WorkerTurn): string {
  return join(turn.runDir, 'opencode-home');
}

/** OpenCode names models `provider/model`; ours are bare names of the CLI's built-in providers. */
function nativeModel(model: string): string {
  if (model.includes('/')) return model;
  return /^claude-/.test(model) ? `anthropic/${model}` : `openai/${model}`;
}

/** The npm registry OpenCode's startup plugin lookup goes to: a closed loopback port, never the model gateway. */
export const DEAD_REGISTRY = 'http://127.0.0.1:9/';

/**
 * The config OpenCode runs with. No secrets: a gateway's key is staged in the isolated auth.json under
 * the provider id (Bearer), or referenced as `{env:KEY_ENV}` for an x-api-key header.
 */
export function opencodeConfig(turn: WorkerTurn): Record<string, unknown> {
  const write = turn.sandbox === 'workspace-write' ? 'allow' : 'deny';
  const config: Record<string, unknown> = {
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    mcp: {},
    permission: { edit: write, bash: write, webfetch: 'deny' },
  };
  const gw = turn.gateway;
  const mapped = providerModel(turn);
  if (gw) {
    const model = mapped ?? 'default';
    const options: Record<string, unknown> = { baseURL: gw.baseUrl.replace(/\/+$/, '') };
    if (gw.authStyle === 'x-api-key') options.headers = { 'x-api-key': `{env:${gw.keyEnv}}` };
    config.provider = { [PROVIDER]: { npm: '@ai-sdk/openai-compatible', name: gw.name, options, models: { [model]: { name: model, tool_call: true } } } };
    config.model = `${PROVIDER}/${model}`;
    config.small_model = `${PROVIDER}/${model}`;
    return config;
  }
  if (mapped) config.model = nativeModel(mapped);
  const urls = authOfTurn('opencode', turn).baseUrls;
  const provider: Record<string, unknown> = {};
  if (urls.OPENAI_BASE_URL) provider.openai = { options: { baseURL: urls.OPENAI_BASE_URL } };
  if (urls.ANTHROPIC_BASE_URL) provider.anthropic = { options: { baseURL: urls.ANTHROPIC_BASE_URL } };
  if (Object.keys(provider).length) config.provider = provider;
  return config;
}

async function buildSpawn(turn: WorkerTurn): Promise<SpawnSpec> {
  const cli = requireCliCommand('opencode', 'opencode', turn.command);
  const home = opencodeHome(turn);
  const xdg = {
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
  };
  for (const d of Object.values(xdg)) mkdirSync(d, { recursive: true });
  const auth = authOfTurn('opencode', turn);
  const authFile = join(xdg.XDG_DATA_HOME, 'opencode', 'auth.json');
  const env: Record<string, string> = {
    ...turn.baseEnv,
    ...(auth.mode === 'env' ? auth.env : {}),
    HOME: home,
    ...xdg,
    OPENCODE_CONFIG_CONTENT: JSON.stringify(opencodeConfig(turn)),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
    npm_config_registry: DEAD_REGISTRY,
  };
  let release: (() => void) | undefined;
  const gw = turn.gateway;
  if (gw) {
    if (gw.authStyle === 'x-api-key') {
      if (gw.key !== null) env[gw.keyEnv] = gw.key;
    } else if (gw.key !== null) {
      release = stageSecretFile(authFile, JSON.stringify({ [PROVIDER]: { type: 'api', key: gw.key } }));
    }
  } else if (auth.mode === 'login' && auth.loginFile) {
    release = stageLogin(auth.loginFile, authFile);
  }
  const args = ['run', '--format', 'json'];
  if (turn.resumeSessionId) args.push('--session', turn.resumeSessionId);
  if (turn.reasoningEffort && turn.reasoningEffort !== 'medium') args.push('--variant', turn.reasoningEffort === 'xhigh' ? 'max' : turn.reasoningEffort);
  // The prompt on stdin (`run` without a message reads it there): never argv, which any local user can read.
  return { command: cli.bin, args: [...cli.prefix, ...args], env, cwd: turn.workdir, release, stdin: turn.prompt };
}

function createParser(turn: WorkerTurn): StreamParser {
  let sessionId: string | null = turn.resumeSessionId;
  let started = false;
  let stepText: string[] = [];
  let finalText: string | null = null;
  let failure: string | null = null;
  const model = turn.model;

  return {
    line(line: string): NormalizedEvent[] {
      const e = JSON.parse(line) as Record<string, unknown>;
      const out: NormalizedEvent[] = [];
      if (typeof e.sessionID === 'string') {
        sessionId = e.sessionID;
        if (!started) out.push({ type: 'worker.started', sessionId, model });
        started = true;
      }
      const part = (e.part ?? {}) as Record<string, unknown>;
      switch (e.type) {
        case 'step_start':
          stepText = [];
          break;
        case 'text':
          if (typeof part.text === 'string') {
            stepText.push(part.text);
            finalText = stepText.join('');
            out.push({ type: 'worker.message', text: part.text });
          }
          break;
        case 'tool_use': {
          const state = (part.state ?? {}) as Record<string, unknown>;
          const status = state.status === 'completed' ? 'completed' : state.status === 'error' ? 'failed' : 'started';
          const output = typeof state.output === 'string' ? state.output : typeof state.error === 'string' ? state.error : undefined;
          out.push({ type: 'worker.tool', name: String(part.tool), status, input: state.input, output: output?.slice(0, 4000) });
          break;
        }
        case 'step_finish': {
          const t = (part.tokens ?? {}) as { input?: number; output?: number; reasoning?: number; cache?: { read?: number; write?: number } };
          const cached = t.cache?.read ?? 0;
          out.push({
            type: 'worker.usage',
            inputTokens: (t.input ?? 0) + cached + (t.cache?.write ?? 0),
            cachedTokens: cached,
            outputTokens: (t.output ?? 0) + (t.reasoning ?? 0),
            model,
            costUsd: typeof part.cost === 'number' ? part.cost : null,
          });
          break;
        }
        case 'error': {
          const err = (e.error ?? {}) as { name?: string; data?: { message?: string; statusCode?: number } };
          const status = err.data?.statusCode;
          failure = `${err.name ?? 'Error'}${status ? ` ${status}` : ''}: ${err.data?.message ?? 'opencode reported an error'}`;
          out.push({ type: 'worker.failed', message: failure, rateLimited: status === 429 || RATE_LIMIT_PATTERN.test(failure) });
          break;
        }
      }
      return out;
    },
    finish(exitCode, stderrTail): TurnOutcome {
      if (exitCode === 0 && failure === null) return { ok: true, finalText, sessionId };
      const tail = stderrTail.trim();
      const message = failure ?? `opencode exited with code ${exitCode}${tail ? `: ${tail.slice(-500)}` : ''}`;
      return { ok: false, finalText, sessionId, error: { code: RATE_LIMIT_PATTERN.test(message) ? 'rate_limited' : 'worker_failed', message } };
    },
  };
}

function detect(command?: readonly string[] | null): Promise<WorkerInfo> {
  return detectCli('opencode', 'opencode', command, 'npm i -g opencode-ai', { sessions: true, structuredOutput: false, sandboxModes: ['read-only', 'workspace-write'] });
}

export const opencodeAdapter: WorkerAdapter = { name: 'opencode', maxConcurrency: 4, detect, buildSpawn, createParser };
