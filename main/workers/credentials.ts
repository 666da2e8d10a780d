import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { AUTH_MODES, Config } from '../core/config.js';
import { registerSecretValues } from '../core/secret-values.js';
import { loginFileProblem } from './login-shape.js';

/**
 * What credentials a worker receives (`[workers.NAME] auth`), decided without running a model:
 *
 * - `login`: the user's own CLI login file (codex `~/.codex/auth.json`, Claude Code
 *   `~/.claude/.credentials.json`, OpenCode `~/.local/share/opencode/auth.json`) is copied into the
 *   worker's isolated config home for the turn — never their config, MCP servers or history. If the CLI
 *   refreshes the token during the turn, the new file is written back (only when the original is still
 *   the one copied), so a rotating refresh token never logs the user out.
 * - `env`: the CLI's own key variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, …) plus `keys` from config.
 * - `gateway`: only the key of the task's gateway (`[gateways.NAME] key_env`).
 * - `none`: nothing (a linked CLI that uses its own config under your HOME, a keyless local model).
 * - unset (auto): the gateway's key when the task names a gateway; else the login file when it exists;
 *   else the CLI's key variables when one is set (those first when an inherited base URL applies).
 *
 * Exported OPENAI_BASE_URL / ANTHROPIC_BASE_URL apply only with `inherit_base_url = true`.
 * LIGHTWORKER_REUSE_CLI_AUTH (the old opt-in) is no longer needed: login reuse is the default.
 */
export type AuthMode = (typeof AUTH_MODES)[number];

interface CliAuthSpec {
  /** The user's login file, from their environment. */
  loginFile(env: NodeJS.ProcessEnv): string;
  /** Key variables the CLI reads itself. */
  keys: string[];
  /** Base-URL variables honoured with `inherit_base_url`. */
  baseUrlVars: string[];
  loginFix: string;
}

const userHome = (env: NodeJS.ProcessEnv) => env.HOME || homedir();

export const CLI_AUTH: Record<string, CliAuthSpec> = {
  codex: {
    loginFile: (e) => join(e.CODEX_HOME || join(userHome(e), '.codex'), 'auth.json'),
    keys: ['CODEX_API_KEY', 'OPENAI_API_KEY'],
    baseUrlVars: ['OPENAI_BASE_URL'],
    loginFix: 'run `codex login`',
  },
  'claude-code': {
    loginFile: (e) => join(e.CLAUDE_CONFIG_DIR || join(userHome(e), '.claude'), '.credentials.json'),
    keys: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN'],
    baseUrlVars: ['ANTHROPIC_BASE_URL'],
    loginFix: 'run `claude` and `/login` (on macOS the login lives in the Keychain: run `claude setup-token` and export CLAUDE_CODE_OAUTH_TOKEN, then set auth = "env")',
  },
  opencode: {
    loginFile: (e) => join(e.XDG_DATA_HOME || join(userHome(e), '.local', 'share'), 'opencode', 'auth.json'),
    keys: ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY', 'GEMINI_API_KEY', 'GROQ_API_KEY'],
    baseUrlVars: ['OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL'],
    loginFix: 'run `opencode auth login`',
  },
};

/** The `[workers.NAME]` keys that decide authentication. */
export interface WorkerAuthSettings {
  auth?: AuthMode;
  keys?: string[];
  inherit_base_url?: boolean;
}

/** A gateway as authentication sees it. */
export interface GatewayKey {
  name: string;
  keyEnv: string;
  key: string | null;
}

/** What one worker turn authenticates with. */
export interface TurnAuth {
  /** The mode in effect (auto resolved). */
  mode: AuthMode;
  /** Where the credential comes from, for people: `login ~/.codex/auth.json`, `env OPENAI_API_KEY`, `gateway zai (ZAI_KEY)`. */
  source: string;
  ok: boolean;
  /** The exact fix when not ok (or a warning when ok), else null. */
  hint: string | null;
  /** The user's login file to stage in the isolated home (`login`). */
  loginFile: string | null;
  /** Key variables the worker receives (`env`), name → value. */
  env: Record<string, string>;
  /** The user's exported base URLs the worker honours (`inherit_base_url`), name → value. */
  baseUrls: Record<string, string>;
}

/** `[workers.NAME]` of the config as auth settings (empty when absent). */
export function workerAuthSettings(config: Config, worker: string): WorkerAuthSettings {
  return config.workers[worker] ?? {};
}

function tilde(path: string, env: NodeJS.ProcessEnv): string {
  const home = userHome(env);
  return path.startsWith(home + '/') ? `~${path.slice(home.length)}` : path;
}

function pick(names: string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) if (env[n]) out[n] = env[n]!;
  return out;
}

/**
 * Decide what `worker` authenticates with for a turn routed through `gateway` (null: the CLI's own
 * provider). Reads only `env` and the filesystem; every key value it returns is registered for redaction.
 */
export function resolveAuth(worker: string, settings: WorkerAuthSettings, gateway: GatewayKey | null, env: NodeJS.ProcessEnv = process.env): TurnAuth {
  const cli = CLI_AUTH[worker];
  const baseUrls = settings.inherit_base_url && cli ? pick(cli.baseUrlVars, env) : {};
  const base = { loginFile: null, env: {}, baseUrls, hint: null };
  const requested = settings.auth ?? (cli ? undefined : 'none');
  const ignoredBaseUrl = cli && !settings.inherit_base_url ? cli.baseUrlVars.find((v) => env[v]) : undefined;
  const note = ignoredBaseUrl
    ? `your exported ${ignoredBaseUrl} is not used; set inherit_base_url = true in [workers.${worker}] to route through it, or configure a [gateways.NAME]`
    : null;

  const viaGateway = (): TurnAuth => {
    if (!gateway) {
      return { ...base, mode: 'gateway', source: 'gateway (none routed)', ok: false, hint: `auth = "gateway" needs a gateway: configure [gateways.NAME] and submit with --gateway NAME` };
    }
    const ok = gateway.key !== null && gateway.key !== '';
    return { ...base, mode: 'gateway', source: `gateway ${gateway.name} (${gateway.keyEnv})`, ok, hint: ok ? null : `export ${gateway.keyEnv} where LightWorker runs (the key of gateway ${gateway.name})` };
  };
  // A login file that is there but holds nothing usable (`{}`, cut off): said, never used.
  let broken: { path: string; problem: string } | null = null;
  const viaLogin = (): TurnAuth | null => {
    if (!cli) return null;
    const file = cli.loginFile(env);
    if (!existsSync(file)) return null;
    const problem = loginFileProblem(worker, file);
    if (problem) {
      broken = { path: tilde(file, env), problem };
      return null;
    }
    return { ...base, mode: 'login', source: `login ${tilde(file, env)}`, ok: true, loginFile: file, hint: note };
  };
  const viaEnv = (): TurnAuth | null => {
    const names = [...(cli?.keys ?? []), ...(settings.keys ?? [])];
    const keys = pick(names, env);
    registerSecretValues(Object.values(keys));
    if (!Object.keys(keys).length) return null;
    const hint = [broken ? `${broken.path} ${broken.problem}, so it is not used` : null, note].filter(Boolean).join('; ') || null;
    return { ...base, mode: 'env', source: `env ${Object.keys(keys).join(', ')}`, ok: true, env: keys, hint };
  };
  const unusableLogin = (b: { path: string; problem: string }, fix: string): TurnAuth => ({ ...base, mode: 'login', source: `login ${b.path} (unusable)`, ok: false, hint: `${b.path} ${b.problem}; ${fix}` });

  if (requested === 'none') return { ...base, mode: 'none', source: cli ? 'none' : 'its own config (your HOME)', ok: true };
  if (requested === 'gateway' || (requested === undefined && gateway)) return viaGateway();
  if (requested === 'login') {
    const login = viaLogin();
    if (login) return login;
    if (broken && cli) return unusableLogin(broken, cli.loginFix);
    return { ...base, mode: 'login', source: 'login (missing)', ok: false, hint: cli ? `${cli.loginFix}; expected ${tilde(cli.loginFile(env), env)}` : `worker ${worker} has no known login file; use auth = "env" or "none"` };
  }
  if (requested === 'env') {
    const names = [...(cli?.keys ?? []), ...(settings.keys ?? [])];
    return viaEnv() ?? { ...base, mode: 'env', source: 'env (none set)', ok: false, hint: names.length ? `export ${names.join(' or ')} where LightWorker runs` : `list the key variables in [workers.${worker}] keys = [...]` };
  }
  // An exported base URL the user opted into comes with its exported key (ANTHROPIC_BASE_URL +
  // ANTHROPIC_AUTH_TOKEN for an Anthropic-compatible provider): that pair wins over the vendor login.
  const found = Object.keys(baseUrls).length ? (viaEnv() ?? viaLogin()) : (viaLogin() ?? viaEnv());
  if (found) return found;
  if (broken) return unusableLogin(broken, `${cli!.loginFix}, or export ${cli!.keys.join(' / ')}, or route it through a gateway ([gateways.NAME], --gateway NAME)`);
  return {
    ...base, mode: 'login', source: 'none found', ok: false,
    hint: `${cli!.loginFix}, or export ${cli!.keys.join(' / ')}, or route it through a gateway ([gateways.NAME], --gateway NAME)`,
  };
}

/** Every string value in a JSON document (none when it is not JSON). */
function stringLeaves(text: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  try {
    walk(JSON.parse(text));
  } catch {
    // Not JSON: nothing to register by value; the shape-based redaction still applies.
  }
  return out;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * Copy the user's login file to `dest` for one turn. The returned release (call it when the turn's
 * process tree has ended) writes a refreshed copy back to the original — only if the original is still
 * what was copied — and then removes the copy, so no credential stays in the run folder.
 */
export function stageLogin(src: string, dest: string): () => void {
  const original = readFileSync(src);
  // Whatever the worker prints of its login (tokens, keys) is redacted like any other secret.
  registerSecretValues(stringLeaves(original.toString('utf8')));
  mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
  copyFileSync(src, dest);
  return () => {
    try {
      if (!existsSync(dest)) return;
      const now = readFileSync(dest);
      if (sha(now) !== sha(original) && existsSync(src) && sha(readFileSync(src)) === sha(original)) {
        const tmp = `${src}.lightworker-${process.pid}`;
        writeFileSync(tmp, now, { mode: 0o600 });
        renameSync(tmp, src);
      }
    } finally {
      rmSync(dest, { force: true });
    }
  };
}

/** Set on a runner an MCP server started (scheduler/background.ts): its environment is the MCP host's. */
export const STARTED_BY_ENV = 'LIGHTWORKER_STARTED_BY';

/**
 * The `auth_missing` message of a task. A runner an MCP server started has the environment the MCP host
 * gave that server, and Codex gives only a short whitelist (PATH, HOME, …): a key the user exported in
 * their shell is then missing here although `workers` in that shell shows it.
 */
export function authMissingMessage(worker: string, auth: TurnAuth, env: NodeJS.ProcessEnv = process.env): string {
  const base = `worker ${worker} has no credentials (${auth.source}): ${auth.hint}`;
  if (env[STARTED_BY_ENV] !== 'mcp') return base;
  return `${base}. This runner was started by an MCP server (lightworker mcp), so it has only the environment the MCP host passed it; the likely cause is the host's environment whitelist (Codex passes only a few variables): name the keys in the host's MCP config (Codex: env_vars = [...], as \`lightworker mcp-config --client codex\` prints) or in config.toml's [gateways.NAME] key_env`;
}

/** Write a secret file for one turn (mode 0600); the returned release removes it. */
export function stageSecretFile(dest: string, content: string): () => void {
  mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
  writeFileSync(dest, content, { mode: 0o600 });
  return () => rmSync(dest, { force: true });
}

/** The turn's authentication: as the runner resolved it, else auto from this process's environment. */
export function authOfTurn(worker: string, turn: { auth?: TurnAuth; gateway: GatewayKey | null }): TurnAuth {
  return turn.auth ?? resolveAuth(worker, {}, turn.gateway);
}

/** Where the adapters stage credentials inside a turn's run folder (codex, Claude Code, OpenCode). */
export const STAGED_CREDENTIALS = ['codex-home/auth.json', 'claude-home/.claude/.credentials.json', 'opencode-home/.local/share/opencode/auth.json'];

/**
 * Remove credentials a turn staged in `runDir` but never released (its runner died mid-turn): called on
 * takeover, so a crash leaves no login or key in the artifacts.
 */
export function removeStagedCredentials(runDir: string): void {
  for (const rel of STAGED_CREDENTIALS) rmSync(join(runDir, rel), { force: true });
}
