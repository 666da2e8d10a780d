import { existsSync, mkdirSync, readdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { WorkerTurn } from '../adapter.js';
import { opencodeConfig, DEAD_REGISTRY } from '../opencode.js';
import { providerModel } from '../routing.js';
import { findCliBinary } from '../cli-detect.js';
import { findOnPath } from '../which.js';

/**
 * The ACP agents LightWorker knows by name: how each is started and pointed at a gateway, its own
 * config home under the turn's run folder (the user's settings, MCP servers and sessions never apply),
 * and which session mode lets it edit the worktree without asking (shell commands still ask, and the
 * ask comes to LightWorker). Anything else speaking ACP: `[workers.NAME] acp = ["cmd", "args"]`.
 */
export interface AcpAgentDef {
  name: string;
  /** Binary looked up in node_modules/.bin, then PATH. */
  bin: string;
  args: string[];
  install: string;
  /** Session mode ids, best first, for a turn in this sandbox. */
  modes(sandbox: WorkerTurn['sandbox']): string[];
  /** Extra arguments and environment for a turn (model, gateway, config home). `home` exists. */
  configure?(turn: WorkerTurn, home: string): { args?: string[]; env?: Record<string, string> };
  /** False: the agent reads files itself (its missing-file check fails on ACP's not-found error); writes still come to LightWorker. */
  serveReads?: boolean;
  /** Key variables the agent reads, passed from LightWorker's environment when no gateway is routed. */
  keyVars: string[];
  /**
   * Why follow-ups never use this agent's session/load although it offers it: each continues in a fresh
   * session carrying the earlier ask and answer (said in a worker.warning).
   */
  noLoad?: string;
  /** Milliseconds the agent keeps its input open after a turn, to finish writing its session before it exits on end of input. */
  settleMs?: number;
  /** Proven end to end against the real CLI here (README table), or why not. */
  notProven?: string;
}

const gwBase = (turn: WorkerTurn) => turn.gateway?.baseUrl.replace(/\/+$/, '') ?? null;

const gemini: AcpAgentDef = {
  name: 'gemini',
  bin: 'gemini',
  args: ['--acp'],
  install: 'npm i -g @google/gemini-cli',
  serveReads: false,
  keyVars: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
  noLoad: 'Gemini CLI 0.61 starts a new recording of the session before it reads it back, so session/load finds "No previous sessions found" (every time on a loaded machine)',
  modes: (s) => (s === 'workspace-write' ? ['autoEdit', 'auto_edit'] : ['default']),
  configure(turn, home) {
    const dir = join(home, '.gemini');
    mkdirSync(dir, { recursive: true });
    // maxAttempts 2: a 429 or an outage is reported after one retry (the CLI's default is 10 with backoff).
    const settings = { general: { disableAutoUpdate: true, disableUpdateNag: true, maxAttempts: 2 }, telemetry: { enabled: false }, privacy: { usageStatisticsEnabled: false }, security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: true } }, ide: { enabled: false } };
    writeFileSync(join(dir, 'settings.json'), JSON.stringify(settings));
    // Only the task's folder is trusted (its approval modes need that), in this turn's own config home.
    writeFileSync(join(dir, 'trustedFolders.json'), JSON.stringify({ [turn.workdir]: 'TRUST_FOLDER' }));
    const env: Record<string, string> = { GEMINI_CLI_NO_RELAUNCH: 'true', GEMINI_TELEMETRY_ENABLED: 'false' };
    const base = gwBase(turn);
    // Gemini's base URL is the host root: requests go to {base}/v1beta/models/{model}:streamGenerateContent.
    if (base) env.GOOGLE_GEMINI_BASE_URL = base.replace(/\/v1(beta)?$/, '');
    if (turn.gateway?.key) env.GEMINI_API_KEY = turn.gateway.key;
    const model = providerModel(turn);
    return { args: model ? ['--model', model] : [], env };
  },
};

const claudeAcp: AcpAgentDef = {
  name: 'claude-acp',
  bin: 'claude-agent-acp',
  args: [],
  install: 'npm i -g @zed-industries/claude-agent-acp',
  keyVars: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'],
  modes: (s) => (s === 'workspace-write' ? ['acceptEdits'] : ['default']),
  configure(turn, home) {
    const env: Record<string, string> = { CLAUDE_CONFIG_DIR: join(home, '.claude'), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_MAX_RETRIES: '2', API_TIMEOUT_MS: '120000' };
    mkdirSync(env.CLAUDE_CONFIG_DIR, { recursive: true });
    const base = gwBase(turn);
    if (base) env.ANTHROPIC_BASE_URL = base.replace(/\/v1$/, '');
    if (turn.gateway?.key) env[turn.gateway.authStyle === 'bearer' ? 'ANTHROPIC_AUTH_TOKEN' : 'ANTHROPIC_API_KEY'] = turn.gateway.key;
    const model = providerModel(turn);
    if (model) env.ANTHROPIC_MODEL = model;
    return { env };
  },
};

/**
 * The bubblewrap of an installed Codex CLI, for codex-acp, which ships none: without a `bwrap` on PATH
 * every sandboxed edit it makes panics ("bubblewrap is unavailable") and comes back as an ask to run
 * unsandboxed. A folder in the turn's home holding only that one link, or null (not Linux, a system
 * bwrap, or no Codex CLI with one).
 */
export function codexBwrapDir(home: string, path: string | undefined): string | null {
  if (process.platform !== 'linux' || findOnPath('bwrap', path)) return null;
  const codex = findCliBinary('codex');
  if (!codex) return null;
  let pkg: string;
  try {
    pkg = dirname(dirname(realpathSync(codex)));
  } catch {
    return null;
  }
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  for (const vendor of [join(dirname(pkg), `codex-linux-${arch}`, 'vendor'), join(pkg, 'vendor'), join(pkg, 'node_modules', '@openai', `codex-linux-${arch}`, 'vendor')]) {
    const triples = existsSync(vendor) ? readdirSync(vendor) : [];
    const bwrap = triples.map((t) => join(vendor, t, 'codex-resources', 'bwrap')).find((f) => existsSync(f));
    if (!bwrap) continue;
    const dir = join(home, 'bwrap-bin');
    mkdirSync(dir, { recursive: true });
    if (!existsSync(join(dir, 'bwrap'))) symlinkSync(bwrap, join(dir, 'bwrap'));
    return dir;
  }
  return null;
}

const codexAcp: AcpAgentDef = {
  name: 'codex-acp',
  bin: 'codex-acp',
  args: [],
  install: 'npm i -g @zed-industries/codex-acp',
  keyVars: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
  modes: (s) => (s === 'workspace-write' ? ['auto', 'workspace-write'] : ['read-only']),
  configure(turn, home) {
    const args = ['-c', 'analytics.enabled=false', '-c', 'features.plugins=false', '-c', 'features.shell_snapshot=false', '-c', 'features.unbounded_connection_retries=false'];
    const env: Record<string, string> = { CODEX_HOME: home };
    const bwrap = codexBwrapDir(home, turn.baseEnv.PATH);
    if (bwrap) env.PATH = [bwrap, turn.baseEnv.PATH].filter(Boolean).join(':');
    const base = gwBase(turn);
    if (base && turn.gateway) {
      args.push('-c', 'model_provider=lightworker', '-c', `model_providers.lightworker={name="${turn.gateway.name.replace(/"/g, '')}",base_url="${base}",wire_api="responses",env_key="LIGHTWORKER_GATEWAY_KEY",request_max_retries=2,stream_max_retries=2}`);
      if (turn.gateway.key) env.LIGHTWORKER_GATEWAY_KEY = turn.gateway.key;
    }
    const model = providerModel(turn);
    if (model) args.push('-c', `model="${model.replace(/"/g, '')}"`);
    return { args, env };
  },
};

const opencodeAcp: AcpAgentDef = {
  name: 'opencode-acp',
  bin: 'opencode',
  args: ['acp'],
  install: 'npm i -g opencode-ai',
  keyVars: ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'],
  modes: () => [],
  configure(turn, home) {
    const xdg = { XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local', 'share'), XDG_CACHE_HOME: join(home, '.cache'), XDG_STATE_HOME: join(home, '.local', 'state') };
    for (const d of Object.values(xdg)) mkdirSync(d, { recursive: true });
    const config = opencodeConfig(turn);
    // Over ACP, OpenCode's own permission prompts become session/request_permission: shell commands ask.
    config.permission = { edit: turn.sandbox === 'workspace-write' ? 'allow' : 'deny', bash: 'ask', webfetch: 'deny' };
    const provider = (config.provider ?? {}) as Record<string, { options?: Record<string, unknown> }>;
    if (turn.gateway?.key && provider.lightworker?.options) provider.lightworker.options.apiKey = '{env:LIGHTWORKER_GATEWAY_KEY}';
    return {
      env: {
        ...xdg, OPENCODE_CONFIG_CONTENT: JSON.stringify(config), OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1', OPENCODE_DISABLE_CLAUDE_CODE: '1', npm_config_registry: DEAD_REGISTRY,
        ...(turn.gateway?.key ? { LIGHTWORKER_GATEWAY_KEY: turn.gateway.key } : {}),
      },
    };
  },
};

const qwen: AcpAgentDef = {
  name: 'qwen',
  bin: 'qwen',
  args: ['--acp'],
  install: 'npm i -g @qwen-code/qwen-code@0.15.10 (later versions need Node 22)',
  keyVars: ['OPENAI_API_KEY', 'DASHSCOPE_API_KEY'],
  // Qwen Code 0.15 queues the turn's last record (the answer) as an async append and exits on end of input
  // without waiting for it: closed at once, a follow-up loaded the session without its answer.
  settleMs: 1000,
  modes: (s) => (s === 'workspace-write' ? ['auto-edit', 'autoEdit'] : ['default']),
  configure(turn, home) {
    const dir = join(home, '.qwen');
    mkdirSync(dir, { recursive: true });
    // generationConfig.maxRetries 0: Qwen's own rate-limit loop (10 retries from 60 s up to 5 min apart) is off,
    // so a 429 is reported after its request retries alone (7 attempts, 1.5 s doubling, ~80 s).
    const settings = { general: { disableAutoUpdate: true, disableUpdateNag: true }, telemetry: { enabled: false }, privacy: { usageStatisticsEnabled: false }, security: { auth: { selectedType: 'openai' } }, model: { generationConfig: { maxRetries: 0 } } };
    writeFileSync(join(dir, 'settings.json'), JSON.stringify(settings));
    const args: string[] = [];
    const env: Record<string, string> = {};
    const base = gwBase(turn);
    if (base) args.push('--auth-type', 'openai', '--openai-base-url', base);
    if (turn.gateway?.key) env.OPENAI_API_KEY = turn.gateway.key;
    const model = providerModel(turn);
    if (model) args.push('--model', model);
    return { args, env };
  },
};

const copilot: AcpAgentDef = {
  name: 'copilot',
  bin: 'copilot',
  args: ['--acp'],
  install: 'npm i -g @github/copilot',
  keyVars: ['COPILOT_GITHUB_TOKEN', 'GH_TOKEN', 'GITHUB_TOKEN'],
  modes: () => [],
  configure(turn, home) {
    const model = providerModel(turn);
    return { args: model ? ['--model', model] : [], env: { XDG_CONFIG_HOME: join(home, '.config'), XDG_STATE_HOME: join(home, '.local', 'state') } };
  },
  notProven: 'needs a GitHub Copilot login and talks only to GitHub\'s service (no base-URL setting for a local gateway)',
};

export const ACP_AGENTS: readonly AcpAgentDef[] = [gemini, claudeAcp, codexAcp, opencodeAcp, qwen, copilot];
