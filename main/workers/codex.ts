import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  RATE_LIMIT_PATTERN, type NormalizedEvent, type SpawnSpec, type StreamParser, type TurnOutcome, type WorkerAdapter, type WorkerInfo, type WorkerTurn,
} from './adapter.js';
import { detectCli, requireCliCommand } from './cli-detect.js';
import { authOfTurn, stageLogin } from './credentials.js';
import { providerModel } from './routing.js';
import { PROMPT_PROTOCOL } from '../cachelab/prompt.js';
import { mkdirPrivate, PRIVATE_FILE } from '../core/private-home.js';

/**
 * Codex CLI (`codex exec --json`). Every turn runs with CODEX_HOME = <runDir>/codex-home, so the
 * user's ~/.codex (config, MCP servers, history) never applies; follow-ups must reuse the same runDir
 * (the session lives there). Credentials: see buildSpawn. A gateway becomes a custom Responses-API
 * provider whose key is read from `gateway.keyEnv` (Bearer, or an x-api-key header), set for the child only. Flags that stop outbound traffic: --disable plugins
 * (git ls-remote github.com), -c analytics.enabled=false, --disable shell_snapshot,
 * --disable unbounded_connection_retries.
 *
 * No skills: Codex would install its bundled skills into CODEX_HOME and list them, with the absolute
 * per-attempt CODEX_HOME path as their root, in a developer message that precedes our prompt — which
 * made every task's request diverge ~30 KB in, before LightWorker's stable prefix (a provider's prefix
 * cache could never reach it). `skills.bundled.enabled=false` stops the install,
 * `skills.include_instructions=false` drops the section (repository skills included), so the bytes
 * before our prompt depend only on the Codex version, model, sandbox, schema and working directory.
 *
 * LightWorker's stable prefix (prompt protocol: role, rules, schema, pack) goes in as
 * `developer_instructions`, which Codex places before its <environment_context> (cwd, workspace
 * roots): execute tasks each run in their own worktree, so a prefix after that message would never be
 * shared. The task-specific part stays the user prompt. `exec resume` replays the original developer
 * message from the session, so follow-ups need nothing extra.
 */
const PROVIDER = 'lightworker';
const EFFORT: Record<string, string> = { low: 'low', medium: 'medium', high: 'high', xhigh: 'xhigh' };

function tomlString(s: string): string {
  return JSON.stringify(s);
}

export function codexHome(turn: WorkerTurn): string {
  return join(turn.runDir, 'codex-home');
}

export function lastMessagePath(turn: WorkerTurn): string {
  return join(turn.runDir, 'codex-last-message.txt');
}

const TASK_HEADING = '\n\n# Task\n';

/**
 * Split a first-turn prompt of the current protocol into its stable part and the task-specific rest
 * (main/cachelab/prompt.ts: `${stable}\n\n# Task\n…`). Anything else (follow-ups, other layouts) is
 * sent whole. The first heading is the split: inside a pack it still falls at the same place for
 * every task of the cohort, and no text is lost either way.
 */
export function splitStablePrefix(prompt: string): { developer: string | null; user: string } {
  const at = prompt.startsWith(`[${PROMPT_PROTOCOL}]`) ? prompt.indexOf(TASK_HEADING) : -1;
  if (at <= 0) return { developer: null, user: prompt };
  return { developer: prompt.slice(0, at), user: prompt.slice(at + 2) };
}

/** One `model_providers.lightworker` table: a gateway, or the user's own base URL (inherit_base_url). */
function providerTable(name: string, baseUrl: string, key: { envKey?: string; header?: string; openaiAuth?: boolean }): string {
  return [
    `name=${tomlString(name)}`,
    `base_url=${tomlString(baseUrl.replace(/\/+$/, ''))}`,
    'wire_api="responses"',
    ...(key.envKey ? [`env_key=${tomlString(key.envKey)}`] : []),
    ...(key.header ? [`env_http_headers={${tomlString('x-api-key')}=${tomlString(key.header)}}`] : []),
    ...(key.openaiAuth ? ['requires_openai_auth=true'] : []),
    'request_max_retries=2',
    'stream_max_retries=2',
    'stream_idle_timeout_ms=120000',
  ].join(',');
}

/**
 * Credentials (credentials.ts): `login` stages the user's auth.json in CODEX_HOME for the turn; `env`
 * passes the key as CODEX_API_KEY (what `codex exec` reads; OPENAI_API_KEY is mapped to it); a gateway
 * gets its key in `key_env`. The shell Codex runs sees none of them (shell_environment_policy.exclude),
 * runs as a non-login shell (allow_login_shell=false) with HOME = an empty folder (emptyHome): no user rc file.
 */
async function buildSpawn(turn: WorkerTurn): Promise<SpawnSpec> {
  const cli = requireCliCommand('codex', 'codex', turn.command);
  const home = codexHome(turn);
  mkdirSync(home, { recursive: true });
  const shellHome = emptyHome(turn);
  rmSync(lastMessagePath(turn), { force: true });
  const auth = authOfTurn('codex', turn);
  const env: Record<string, string> = { ...turn.baseEnv, HOME: shellHome, CODEX_HOME: home };
  const hidden = new Set<string>();
  let release: (() => void) | undefined;
  if (auth.mode === 'login' && auth.loginFile) release = stageLogin(auth.loginFile, join(home, 'auth.json'));
  if (auth.mode === 'env') {
    Object.assign(env, auth.env);
    const key = auth.env.CODEX_API_KEY ?? auth.env.OPENAI_API_KEY;
    if (key) env.CODEX_API_KEY = key;
    delete env.OPENAI_API_KEY;
    for (const k of [...Object.keys(auth.env), 'CODEX_API_KEY']) hidden.add(k);
  }
  const args = ['exec', '--json', '--skip-git-repo-check', '--color', 'never'];
  args.push('--disable', 'plugins', '--disable', 'shell_snapshot', '--disable', 'unbounded_connection_retries', '-c', 'analytics.enabled=false');
  args.push('-c', 'skills.bundled.enabled=false', '-c', 'skills.include_instructions=false');
  const gw = turn.gateway;
  let provider: string | null = null;
  if (gw) {
    if (gw.key !== null) env[gw.keyEnv] = gw.key;
    hidden.add(gw.keyEnv);
    provider = providerTable(gw.name, gw.baseUrl, gw.authStyle === 'x-api-key' ? { header: gw.keyEnv } : { envKey: gw.keyEnv });
  } else if (auth.baseUrls.OPENAI_BASE_URL) {
    provider = providerTable('inherited OPENAI_BASE_URL', auth.baseUrls.OPENAI_BASE_URL, auth.mode === 'env' ? { envKey: 'CODEX_API_KEY' } : { openaiAuth: true });
  }
  if (provider) args.push('-c', `model_provider=${PROVIDER}`, '-c', `model_providers.${PROVIDER}={${provider}}`);
  args.push('-c', 'allow_login_shell=false');
  if (hidden.size) args.push('-c', `shell_environment_policy.exclude=[${[...hidden].map(tomlString).join(',')}]`);
  const model = providerModel(turn);
  if (model) args.push('-m', model);
  if (turn.reasoningEffort) args.push('-c', `model_reasoning_effort=${tomlString(EFFORT[turn.reasoningEffort] ?? 'medium')}`);
  args.push('--sandbox', turn.sandbox, '-C', turn.workdir, '-o', lastMessagePath(turn));
  if (turn.resultSchema) args.push('--output-schema', schemaFile(turn, JSON.stringify(turn.resultSchema)));
  const prompt = turn.resumeSessionId ? { developer: null, user: turn.prompt } : splitStablePrefix(turn.prompt);
  writeTurnConfig(home, prompt.developer);
  if (turn.resumeSessionId) args.push('resume', turn.resumeSessionId);
  // `-`: the prompt is read from stdin. Never argv, which any local user can read (/proc/<pid>/cmdline).
  args.push('-');
  return { command: cli.bin, args: [...cli.prefix, ...args], env, cwd: turn.workdir, release, stdin: prompt.user };
}

const TURN_CONFIG_MARK = '# Written by LightWorker for one turn; replaced by the next.\n';

/**
 * The stable prefix as `developer_instructions` in CODEX_HOME/config.toml (0600, in the task's private
 * folder) rather than `-c` on the command line: it may carry a context pack, and argv is readable by
 * every local user. A resumed turn gets none (the session replays it), so the file is removed then.
 */
function writeTurnConfig(home: string, developer: string | null): void {
  const file = join(home, 'config.toml');
  if (developer === null) {
    if (existsSync(file) && readFileSync(file, 'utf8').startsWith(TURN_CONFIG_MARK)) rmSync(file, { force: true });
    return;
  }
  // A file of the task's own, never a hard link to one shared by tasks with the same text: Codex only reads
  // it (traced: test/bench/_codex-config-trace.ts), but a worker's shell that can write CODEX_HOME (a home
  // under /tmp, which workspace-write allows, or no sandbox) would write into other tasks' settings through it.
  writeFileSync(file, `${TURN_CONFIG_MARK}developer_instructions = ${tomlString(developer)}\n`, { mode: PRIVATE_FILE });
}

/**
 * HOME for the shell Codex runs: an empty folder, so no rc file is read. With a shareDir, one read-only
 * folder for every turn (`empty-home`), checked to be an empty directory before each: a turn then makes no
 * folder (measured in a 200-task drain, npm run bench). Found not empty (or not a plain directory), this turn gets its own under runDir, as
 * every turn did before. What a turn's shell may write is the CLI's sandbox's business either way.
 */
function emptyHome(turn: WorkerTurn): string {
  if (turn.shareDir) {
    const dir = join(turn.shareDir, 'empty-home');
    try {
      if (lstatSync(dir).isDirectory() && readdirSync(dir).length === 0) return dir;
    } catch {
      try {
        mkdirPrivate(turn.shareDir);
        mkdirSync(dir, { mode: 0o555 });
        return dir;
      } catch {
        // made meanwhile, or cannot be: checked again next turn; this one gets its own
      }
    }
  }
  const own = join(turn.runDir, 'home');
  mkdirSync(own, { recursive: true });
  return own;
}

/**
 * The file `--output-schema` reads. With a shareDir, one file per schema content
 * (`codex-schema-<sha256>.json`), checked byte for byte before each use and rewritten (atomically) when it
 * is missing or differs: no new file per turn (creating inodes is among a leader's costliest
 * system calls here). Without one, a file in the runDir.
 */
function schemaFile(turn: WorkerTurn, text: string): string {
  if (!turn.shareDir) {
    const file = join(turn.runDir, 'codex-result-schema.json');
    writeFileSync(file, text, { mode: PRIVATE_FILE });
    return file;
  }
  const file = join(turn.shareDir, `codex-schema-${createHash('sha256').update(text).digest('hex').slice(0, 32)}.json`);
  try {
    if (readFileSync(file, 'utf8') === text) return file;
  } catch {
    // missing: written below
  }
  mkdirPrivate(turn.shareDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: PRIVATE_FILE });
  renameSync(tmp, file);
  return file;
}

interface Usage {
  input: number;
  cached: number;
  output: number;
}

/**
 * `turn.completed.usage` is cumulative for the thread across `exec resume`: each turn reports only its own
 * tokens by subtracting the totals of the thread's previous turn. Those travel in the usage event
 * (`thread`), and the runner hands them to the resumed turn (`turn.threadUsage`): no file per turn.
 * Sessions recorded before kept them in CODEX_HOME/lightworker-usage.json, still read for them.
 */
function previousUsage(turn: WorkerTurn, thread: string): Usage {
  const t = turn.threadUsage;
  if (t && t.thread === thread) return { input: t.input, cached: t.cached, output: t.output };
  if (turn.resumeSessionId === thread) {
    try {
      const legacy = (JSON.parse(readFileSync(join(codexHome(turn), 'lightworker-usage.json'), 'utf8')) as Record<string, Usage>)[thread];
      if (legacy) return legacy;
    } catch {
      // none: a fresh thread, or totals lost with the event
    }
  }
  return { input: 0, cached: 0, output: 0 };
}

function createParser(turn: WorkerTurn): StreamParser {
  let sessionId: string | null = turn.resumeSessionId;
  let lastMessage: string | null = null;
  let failure: string | null = null;
  let lastError: string | null = null;
  const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? undefined : JSON.stringify(v));

  function item(kind: 'started' | 'completed', it: Record<string, unknown>): NormalizedEvent[] {
    const type = String(it.type);
    if (type === 'agent_message' && kind === 'completed') {
      lastMessage = String(it.text ?? '');
      return [{ type: 'worker.message', text: lastMessage }];
    }
    const status = kind === 'started' ? 'started' : it.status === 'failed' || (typeof it.exit_code === 'number' && it.exit_code !== 0) ? 'failed' : 'completed';
    if (type === 'command_execution') {
      return [{ type: 'worker.tool', name: 'shell', status, input: it.command, output: kind === 'completed' ? str(it.aggregated_output)?.slice(-4000) : undefined }];
    }
    if (type === 'file_change') return [{ type: 'worker.tool', name: 'apply_patch', status, input: it.changes }];
    if (type === 'mcp_tool_call') {
      return [{ type: 'worker.tool', name: `${String(it.server)}.${String(it.tool)}`, status, input: it.arguments, output: kind === 'completed' ? str(it.result ?? it.error)?.slice(0, 4000) : undefined }];
    }
    if (type === 'web_search') return [{ type: 'worker.tool', name: 'web_search', status, input: it.query }];
    if (type === 'error' && kind === 'completed') lastError = String(it.message ?? '');
    return [];
  }

  return {
    line(line: string): NormalizedEvent[] {
      const e = JSON.parse(line) as Record<string, unknown>;
      switch (e.type) {
        case 'thread.started':
          sessionId = String(e.thread_id);
          return [{ type: 'worker.started', sessionId, model: turn.model }];
        case 'item.started':
          return item('started', (e.item ?? {}) as Record<string, unknown>);
        case 'item.completed':
          return item('completed', (e.item ?? {}) as Record<string, unknown>);
        case 'turn.completed': {
          const u = (e.usage ?? {}) as Record<string, number>;
          const now: Usage = { input: u.input_tokens ?? 0, cached: u.cached_input_tokens ?? 0, output: u.output_tokens ?? 0 };
          const prev = sessionId ? previousUsage(turn, sessionId) : { input: 0, cached: 0, output: 0 };
          const delta = (a: number, b: number) => Math.max(0, a - b);
          return [
            {
              type: 'worker.usage',
              inputTokens: delta(now.input, prev.input),
              cachedTokens: delta(now.cached, prev.cached),
              outputTokens: delta(now.output, prev.output),
              model: turn.model,
              ...(sessionId ? { thread: { thread: sessionId, ...now } } : {}),
            },
          ];
        }
        case 'turn.failed': {
          const err = (e.error ?? {}) as Record<string, unknown>;
          failure = String(err.message ?? lastError ?? 'codex turn failed');
          return [{ type: 'worker.failed', message: failure, rateLimited: RATE_LIMIT_PATTERN.test(failure) }];
        }
        case 'error':
          lastError = String(e.message ?? '');
          return [];
        default:
          return [];
      }
    },
    finish(exitCode, stderrTail): TurnOutcome {
      let finalText = lastMessage;
      const file = lastMessagePath(turn);
      if (existsSync(file)) {
        const text = readFileSync(file, 'utf8');
        if (text.trim()) finalText = text;
      }
      if (exitCode === 0 && failure === null) return { ok: true, finalText, sessionId };
      const tail = stderrTail.trim().split('\n').filter((l) => !/Reading additional input from stdin|could not create PATH aliases/.test(l)).join('\n');
      const message = failure ?? lastError ?? `codex exited with code ${exitCode}${tail ? `: ${tail.slice(-500)}` : ''}`;
      return { ok: false, finalText, sessionId, error: { code: RATE_LIMIT_PATTERN.test(message) ? 'rate_limited' : 'worker_failed', message } };
    },
  };
}

function detect(command?: readonly string[] | null): Promise<WorkerInfo> {
  return detectCli('codex', 'codex', command, 'npm i -g @openai/codex', { sessions: true, structuredOutput: true, sandboxModes: ['read-only', 'workspace-write'] });
}

/**
 * `--sandbox read-only` is enforced by Codex itself around every command and patch it runs (Landlock +
 * seccomp on Linux, Seatbelt on macOS; a command the sandbox cannot start fails instead of running
 * unconfined), and the turn's config home is isolated, so no user setting loosens it. Elsewhere
 * (Windows) read-only tasks get a snapshot.
 */
const confinesReadOnly = () => process.platform === 'linux' || process.platform === 'darwin';

export const codexAdapter: WorkerAdapter = { name: 'codex', maxConcurrency: 4, detect, buildSpawn, createParser, confinesReadOnly };
