import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { AppError } from './errors.js';
import { CONFIG_TEMPLATE } from './config-template.js';
import { PRIVATE_FILE } from './private-home.js';
import { ENV_NAME, KINDS, gatewaySchema, modelRouteSchema, profileSchema, unknownGatewayRef } from './config-routing.js';

export { EFFORTS, GATEWAY_AUTH_STYLES, KINDS } from './config-routing.js';

export const MODES = ['plan_only', 'auto_readonly', 'auto_execute'] as const;

/** How a worker authenticates (main/workers/credentials.ts); unset = auto. */
export const AUTH_MODES = ['login', 'env', 'gateway', 'none'] as const;

/** USD per million tokens of one model; `cached` (prompt-cache reads) defaults to the input price. */
export const priceSchema = z.strictObject({
  input: z.number().min(0).max(10_000),
  cached: z.number().min(0).max(10_000).optional(),
  output: z.number().min(0).max(10_000),
});


/** Built-in workers that run an external CLI: a `[workers.<name>]` block may replace its binary (`command`). */
export const BUILTIN_CLI_WORKERS: readonly string[] = ['codex', 'claude-code', 'opencode'];

const ARGV_HINT = 'must be a non-empty argv array of strings, e.g. ["/opt/agent/bin/agent", "--flag"]';
const argvSchema = z.array(z.string({ error: ARGV_HINT }).min(1, 'must not contain an empty string'), { error: ARGV_HINT }).min(1, ARGV_HINT);

/**
 * `[workers.NAME]`: a linked CLI (`command` + `resume`, argv templates with {prompt_file}, or the prompt on stdin); for a built-in CLI
 * worker (codex, claude-code, opencode) `command` is the binary it runs (the binary and leading
 * arguments put before the adapter's own; no `resume`); and for any worker how it authenticates:
 * `auth`, extra key variables it may receive (`keys`), and whether the user's exported
 * OPENAI_BASE_URL / ANTHROPIC_BASE_URL apply (`inherit_base_url`).
 */
const workerSchema = z.strictObject({
  command: argvSchema.optional(),
  resume: argvSchema.optional(),
  /** An agent speaking the Agent Client Protocol over stdio: its argv (main/workers/acp/). */
  acp: argvSchema.optional(),
  /** A linked CLI's version command (argv, no placeholders), probed by `workers`/`doctor`; without it none is run. */
  version: argvSchema.optional(),
  /** Unset: 2 for a linked CLI, the adapter's own for a built-in one. */
  max_concurrency: z.number().int().min(1).max(64).optional(),
  auth: z.enum(AUTH_MODES).optional(),
  keys: z.array(ENV_NAME).max(32).optional(),
  inherit_base_url: z.boolean().optional(),
  /** The user vouches that this CLI enforces a read-only sandbox on read-only tasks: they run in place, not in a snapshot. */
  read_only_sandbox: z.boolean().optional(),
});

/** `[workers.vscode]`: the VS Code bridge worker (main/workers/vscode.ts), not a linked CLI. */
const vscodeWorkerSchema = z.strictObject({
  /** A bridge's discovery file; default: the live ones in ~/.lightworker/vscode-bridge/. */
  bridge: z.string().min(1).optional(),
  agent: z.enum(['claude-code', 'codex']).optional(),
  max_concurrency: z.number().int().min(1).max(64).default(2),
});

/** What only fits some workers: no binary for mock, no resume template for a built-in CLI. */
function checkWorkerBlocks(workers: Record<string, unknown>, ctx: z.RefinementCtx): void {
  for (const [name, w] of Object.entries(workers)) {
    const block = (w ?? {}) as { command?: unknown; resume?: unknown; version?: unknown; acp?: unknown };
    if (block.acp && (block.command || block.resume)) {
      ctx.addIssue({ code: 'custom', path: [name, 'acp'], message: 'an ACP worker is started by its acp argv and continues its own sessions: drop command and resume' });
    } else if (block.version && (name === 'mock' || BUILTIN_CLI_WORKERS.includes(name))) {
      ctx.addIssue({ code: 'custom', path: [name, 'version'], message: `built-in worker ${name} is asked its version by LightWorker itself; version is for linked CLIs` });
    } else if (name === 'mock' && block.command) ctx.addIssue({ code: 'custom', path: [name, 'command'], message: 'the built-in mock worker runs no external binary' });
    else if (BUILTIN_CLI_WORKERS.includes(name) && block.resume) {
      ctx.addIssue({ code: 'custom', path: [name, 'resume'], message: `built-in worker ${name} resumes its own sessions; only command, max_concurrency and auth keys may be set` });
    }
  }
}

/** Per-repository worktree setup (`.lightworker/setup.toml`, or `[setup."<repo path>"]` here). */
export const setupSchema = z.strictObject({
  copy: z.array(z.string().min(1).max(1024)).max(256).default([]),
  setup: z.union([z.string().min(1).max(4096), z.array(z.string().max(4096)).min(1).max(256)]).optional(),
  setup_timeout_s: z.number().int().min(1).max(86_400).default(600),
});

/** What happens to a worker's request: ask a person, or deny it at once. Never an automatic grant. */
const requestRuleSchema = z.strictObject({
  permission: z.enum(['ask', 'deny']).optional(),
  question: z.enum(['ask', 'deny']).optional(),
});

/** `scheme://user:password@…`: a remote URL carrying credentials. */
const URL_CREDENTIALS = /^([a-z][a-z0-9+.-]*:\/\/)[^/@]*:[^/@]*@/i;

/**
 * `[fleet] repos`: each repository's identity (a name or remote URL) → an absolute local path. The
 * identity is stored with every task and runner, so it may not carry credentials; the message names such
 * an entry with its credentials cut out, never quoting them.
 */
function checkFleetRepos(repos: Record<string, string>, ctx: z.RefinementCtx): void {
  for (const [key, path] of Object.entries(repos)) {
    const shown = JSON.stringify(key.replace(URL_CREDENTIALS, '$1…@').slice(0, 200));
    if (URL_CREDENTIALS.test(key)) ctx.addIssue({ code: 'custom', message: `${shown}: must not contain credentials (a name or a remote URL without user:password@)` });
    else if (!key.length || key.length > 500 || /\s/.test(key)) ctx.addIssue({ code: 'custom', message: `${shown}: expected a repository name or remote URL (1-500 characters, no spaces)` });
    else if (!isAbsolute(path) || path.length > 4096) ctx.addIssue({ code: 'custom', message: `${shown}: the local path must be absolute, got ${JSON.stringify(path.slice(0, 200))}` });
  }
}

export const configSchema = z.strictObject({
  scheduler: z
    .strictObject({
      max_concurrency: z.number().int().min(1).max(256).default(4),
      per_repository: z.number().int().min(1).max(256).default(3),
      per_root: z.number().int().min(1).max(256).default(2),
      lease_ttl_ms: z.number().int().min(500).max(60_000).default(3000),
      kill_grace_ms: z.number().int().min(0).max(120_000).default(5000),
      default_worker: z.string().min(1).default('mock'),
      /** Resume tasks orphaned by a runner's loss at once, outside the retry budget (tasks/auto-resume.ts). */
      auto_resume_orphans: z.boolean().default(true),
      /** A worker starts only while available memory stays above this many MiB plus its typical footprint (0: off). */
      min_free_mib: z.number().int().min(0).max(1_048_576).default(512),
    })
    .prefault({}),
  approvals: z
    .strictObject({
      default_mode: z.enum(MODES).default('auto_readonly'),
      allow_mcp: z.boolean().default(false),
    })
    .prefault({}),
  limits: z
    .strictObject({
      max_depth: z.number().int().min(0).max(8).default(1),
      retry_budget: z.number().int().min(0).max(20).default(3),
      mcp_mutations_per_minute: z.number().int().min(1).max(10_000).default(60),
      /** Follow-ups one task may take (each a worker turn in its session); past it a new task is asked for. */
      maximum_follow_up_turns: z.number().int().min(0).max(1000).default(20),
    })
    .prefault({}),
  /**
   * What one task may spend, counted from its workers' live events across all its attempts (auto-repairs
   * and follow-ups included). Unset: no limit. Each value is also the ceiling an MCP host or a worker may
   * ask for: it may lower a limit, never raise one above what is set here.
   */
  budgets: z
    .strictObject({
      max_tokens: z.number().int().min(1).optional(),
      max_cost_usd: z.number().positive().optional(),
      max_turns: z.number().int().min(1).max(10_000).optional(),
      max_wall_s: z.number().int().min(1).max(30 * 86_400).optional(),
      /** What a whole task tree may spend, its tasks' usage summed while they run (also a ceiling for agents). */
      root_max_tokens: z.number().int().min(1).optional(),
      root_max_cost_usd: z.number().positive().optional(),
      root_max_turns: z.number().int().min(1).max(100_000).optional(),
      /** A crossed budget: `ask` waits for a person (raise it or stop), `fail` ends the task `budget_exceeded`. */
      on_exceeded: z.enum(['ask', 'fail']).default('ask'),
    })
    .prefault({}),
  /** The circuit breaker per worker: this many infrastructure failures in a row pause it for a cool-down that doubles each time it opens again. */
  breaker: z
    .strictObject({
      failures: z.number().int().min(1).max(1000).default(5),
      cooldown_s: z.number().min(0.05).max(86_400).default(60),
      max_cooldown_s: z.number().min(0.05).max(7 * 86_400).default(3600),
    })
    .prefault({}),
  models: z
    .strictObject({
      allow: z.array(z.string().min(1)).default(['gpt-5.5', 'gpt-5.5-mini', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'mock-model']),
      fast: z.string().min(1).default('gpt-5.5-mini'),
      reasoning: z.string().min(1).default('gpt-5.5'),
      /** Per-worker fast/reasoning pair for effort routing (a worker whose CLI needs its own vendor's models). */
      per_worker: z.record(z.string(), z.strictObject({ fast: z.string().min(1), reasoning: z.string().min(1) })).default({ 'claude-code': { fast: 'claude-haiku-4-5', reasoning: 'claude-sonnet-4-5' } }),
      /** Per model: its primary route, and the fallback `retry --strategy fallback_gateway` moves to. */
      routes: z.record(z.string().min(1), z.strictObject({ primary: modelRouteSchema, fallback: modelRouteSchema.optional() })).default({}),
    })
    .prefault({}),
  profiles: z.record(z.string(), profileSchema).default({}),
  routing: z
    .strictObject({
      /** `retry --strategy deeper_profile` moves a task one step along this chain of profiles. */
      escalation: z.array(z.string().min(1)).min(1).default(['fast_worker', 'deep_worker']),
      /** Workflow type → profile it runs with, or "cheapest" (the cheapest adequate profile by cost rank). */
      types: z.partialRecord(z.enum(['chore', 'feature', 'hotfix', 'refactor']), z.string().min(1)).default({ chore: 'cheapest' }),
      /** The gateway of a task that names none, whose profile names none and whose model has no route. */
      default_gateway: z.string().min(1).optional(),
    })
    .prefault({}),
  gateways: z.record(z.string(), gatewaySchema).default({}),
  workers: z.object({ vscode: vscodeWorkerSchema.optional() }).catchall(workerSchema.optional()).superRefine(checkWorkerBlocks).default({}),
  /** Automatic gc (`lightworker gc`) from the leader: off unless the person turns it on (deleting is for good). */
  retention: z
    .strictObject({
      enabled: z.boolean().default(false),
      older_than: z
        .string()
        .regex(/^\s*\d{1,6}\s*[smhdw]\s*$/, 'expected an age like 30d, 12h, 90m or 2w')
        .default('30d'),
      /** How often the leader looks, in seconds. */
      interval_s: z.number().int().min(1).max(7 * 86_400).default(3600),
      /** At most this many trees per pass, so one pass never holds the leader long. */
      max_trees: z.number().int().min(1).max(10_000).default(200),
    })
    .prefault({}),
  worktrees: z
    .strictObject({
      ttl_hours: z.number().min(0).default(72),
      disk_reserve_bytes: z.number().int().min(0).optional(),
    })
    .prefault({}),
  verify: z
    .strictObject({
      auto_repair: z.number().int().min(0).max(5).default(1),
      timeout_s: z.number().int().min(1).max(86_400).default(600),
    })
    .prefault({}),
  output: z
    .strictObject({
      /** Worker output events (messages, tool calls) stored per task attempt; past it they are counted, not stored. */
      max_events: z.number().int().min(10).max(1_000_000).default(2000),
      /** A turn's raw stdout log keeps its first and last halves of this many characters. */
      raw_log_bytes: z.number().int().min(4096).max(1024 * 1024 * 1024).default(8 * 1024 * 1024),
    })
    .prefault({}),
  setup: z.record(z.string(), setupSchema).default({}),
  requests: z
    .strictObject({
      /** A request nobody answers within this many seconds ends its task `failed` (request_expired). */
      expiry_s: z.number().int().min(1).max(30 * 86_400).default(86_400),
      permission: z.enum(['ask', 'deny']).default('ask'),
      question: z.enum(['ask', 'deny']).default('ask'),
      /** Per task kind, then per profile (the profile wins). */
      kinds: z.partialRecord(z.enum(KINDS), requestRuleSchema).default({}),
      profiles: z.record(z.string(), requestRuleSchema).default({}),
    })
    .prefault({}),
  git: z
    .strictObject({
      /** Author of task commits, "Name <email>"; default: the repository's user.name / user.email. */
      author: z.string().regex(/^[^<>]*[^<>\s][^<>]*<[^<>\s]+>\s*$/, 'expected "Name <email>"').optional(),
    })
    .prefault({}),
  isolation: z
    .strictObject({
      /** `auto`: read-only tasks of workers with an enforced read-only sandbox run in place, others in a snapshot; `snapshot`: all in a snapshot. */
      readonly: z.enum(['auto', 'snapshot']).default('auto'),
      /** Clean read-only snapshots kept per repository for reuse. */
      snapshot_pool: z.number().int().min(0).max(32).default(2),
      /** Copy isolation of workspaces that are not git repositories. */
      copy: z
        .strictObject({
          max_bytes: z.number().int().min(1).default(256 * 1024 * 1024),
          max_files: z.number().int().min(1).default(20_000),
          ignore: z
            .array(z.string().min(1).max(1024))
            .max(256)
            .default(['node_modules', '.venv', 'venv', '__pycache__', 'build', 'dist', 'target', '.git', '.hg', '.svn', '.DS_Store']),
        })
        .prefault({}),
    })
    .prefault({}),
  notifications: z
    .strictObject({
      approvals: z.boolean().default(true),
      failures: z.boolean().default(true),
      completions: z.boolean().default(false),
      /** A worker's question or permission request (at once, like approvals). */
      requests: z.boolean().default(true),
    })
    .prefault({}),
  /** Price overrides by model name, over DEFAULT_PRICES (main/tasks/cost.ts). */
  prices: z.record(z.string().min(1).max(200), priceSchema).default({}),
  /**
   * Where tasks live: unset = the home's SQLite file; a PostgreSQL URL = a fleet. The URL here
   * may not carry a password: credentials come from the environment (PGPASSWORD, or
   * LIGHTWORKER_DATABASE_URL in full) or from `url_file`, a file the user names.
   */
  store: z
    .strictObject({
      url: z
        .string()
        .max(2000)
        .regex(/^postgres(ql)?:\/\//, 'expected a postgres:// URL')
        .refine((u) => !/^postgres(ql)?:\/\/[^/@]*:[^/@]*@/.test(u) && !/[?&]password=/i.test(u), 'must not contain a password (use PGPASSWORD, LIGHTWORKER_DATABASE_URL or store.url_file)')
        .optional(),
      url_file: z.string().min(1).max(4096).optional(),
      /** A 32-byte key shared by every host of a fleet, sealing the original text of redacted secrets. */
      key_file: z.string().min(1).max(4096).optional(),
      /** The PostgreSQL schema holding LightWorker's tables (several fleets can share one database). */
      schema: z.string().regex(/^[a-z_][a-z0-9_]{0,40}$/, 'a lower-case identifier (letters, digits, _)').default('lightworker'),
      /**
       * Learn of other processes' commits by LISTEN/NOTIFY (one more connection per process). false: poll a
       * change counter instead (50 ms after a change, backing off to 2 s) — for a transaction-mode pooler
       * such as PgBouncer, which cannot carry LISTEN. A LISTEN that never delivers is noticed and polled too.
       */
      listen: z.boolean().default(true),
      /**
       * How often a leader runs `PRAGMA quick_check` on the SQLite file, in seconds (also on starting to lead);
       * never more often than 100 × what one check took (≤ 1 % of its time).
       */
      check_interval_s: z.number().int().min(1).max(86_400).default(60),
    })
    .prefault({}),
  /** This runner's part of a fleet (PostgreSQL store only). */
  fleet: z
    .strictObject({
      /** This host's id in the fleet (default: the machine's hostname; LIGHTWORKER_HOST_ID overrides). */
      host_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'letters, digits, . _ - (up to 63)').optional(),
      /** Repositories this host serves: a stable name (or a remote URL) → its local path. */
      repos: z.record(z.string(), z.string()).superRefine(checkFleetRepos).default({}),
      /** Tasks running at once across the whole fleet (each runner still has scheduler.max_concurrency slots). */
      max_concurrency: z.number().int().min(1).max(100_000).default(64),
      /** A runner whose heartbeat is older than this is lost: any other runner orphans its tasks. */
      lease_ttl_ms: z.number().int().min(1000).max(600_000).default(10_000),
    })
    .prefault({}),
  /** Pull requests opened from verified tasks (`lightworker pr`) and the watch over them while they are open. */
  pr: z
    .strictObject({
      /** The git remote a task's branch is pushed to; its URL says which forge it is. */
      remote: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'a git remote name').default('origin'),
      /** Open pull requests as drafts. */
      draft: z.boolean().default(true),
      /** Failing checks or new review comments sent back to the agent per pull request, at most. */
      max_fix_rounds: z.number().int().min(0).max(20).default(2),
      /** First interval between polls of an open pull request, in seconds; doubles while nothing changes. */
      poll_s: z.number().min(0.05).max(3600).default(30),
      /** The longest interval between polls, in seconds. */
      max_poll_s: z.number().min(0.05).max(86_400).default(600),
      /** Bytes of a failing check's log sent to the agent (its tail). */
      log_tail_bytes: z.number().int().min(256).max(1024 * 1024).default(8 * 1024),
    })
    .prefault({}),
  /**
   * Forges besides github.com and gitlab.com (GitHub Enterprise, self-hosted GitLab, Gitea/Forgejo): a
   * remote URL that starts with `match` (or whose host is `match`) uses this API. Tokens are never written
   * here: `token_env` names the environment variable that holds one.
   */
  forges: z
    .record(
      z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/, 'a forge name (letters, digits, _ -)'),
      z.strictObject({
        kind: z.enum(['github', 'gitlab', 'gitea']),
        match: z.string().min(1).max(2000),
        api_url: z.string().url().max(2000),
        token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name'),
        /** owner/name (GitLab: the project path) when the remote URL does not show it. */
        repo: z.string().min(1).max(500).optional(),
      }),
    )
    .default({}),
  /** The editor "open worktree" starts: argv, `{path}` replaced (else appended); unset: $VISUAL, $EDITOR, code. */
  editor: z.strictObject({ command: z.array(z.string().min(1).max(4096)).min(1).max(64).optional() }).prefault({}),
});

export type Config = z.infer<typeof configSchema>;

/** The defaults, as a fully-populated object. */
export function defaultConfig(): Config {
  return configSchema.parse({});
}

/** Validate a parsed TOML object; errors name the offending key path. */
export function parseConfig(raw: unknown, source = 'config.toml'): Config {
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0];
    const key = issue.path.join('.') || (issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(root)');
    const where = issue.code === 'unrecognized_keys' ? `${issue.path.join('.') ? issue.path.join('.') + '.' : ''}${issue.keys.join(', ')}` : key;
    throw new AppError('invalid_input', `${source}: ${where}: ${issue.message}`, { key: where });
  }
  const unknown = unknownGatewayRef(result.data);
  if (unknown) throw new AppError('invalid_input', `${source}: ${unknown.key}: unknown gateway "${unknown.name}" (config.toml [gateways]: ${Object.keys(result.data.gateways).join(', ') || 'none configured'})`, { key: unknown.key });
  return result.data;
}


/** Read and validate `config.toml`; a missing file means all defaults. */
export function loadConfig(path: string): Config {
  if (!existsSync(path)) return defaultConfig();
  let raw: unknown;
  try {
    raw = parseToml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new AppError('invalid_input', `${path}: not valid TOML: ${(err as Error).message}`);
  }
  return parseConfig(raw, path);
}

export { CONFIG_TEMPLATE };

export function writeDefaultConfig(path: string, force: boolean): boolean {
  if (existsSync(path) && !force) return false;
  writeFileSync(path, CONFIG_TEMPLATE, { encoding: 'utf8', mode: PRIVATE_FILE });
  return true;
}
