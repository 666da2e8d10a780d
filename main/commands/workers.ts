import { z } from 'zod';
import { AppError } from '../core/errors.js';
import { containsSecret } from '../core/redact.js';
import { deleteSetting, getSetting, setSetting } from '../store/settings.js';
import type { WorkerInfo } from '../workers/adapter.js';
import { promptInArgv, promptInArgvWarning, validateLinkedSpec, type LinkedWorkerSpec } from '../workers/linked.js';
import { allWorkerNames, BUILTIN_ADAPTERS, LINKED_PREFIX, resolveAdapter } from '../workers/registry.js';
import { resolveAuth, workerAuthSettings, type GatewayKey } from '../workers/credentials.js';
import { addGatewayPreset } from '../workers/gateway-presets.js';
import { gatewayKey, workerWaitReason } from '../scheduler/worker-pauses.js';
import { defineCommand, requirePersonOrAllowed, type CommandContext } from './table.js';

export interface WorkerListing extends WorkerInfo {
  builtin: boolean;
  maxConcurrency: number;
  /** What a task of this worker would authenticate with (checked without running a model). */
  auth: { mode: string; source: string; ok: boolean; hint: string | null };
  /** Why it takes no new task now (a rate limit, an open or half-open circuit breaker), or null. */
  paused: string | null;
  /** Whether a task of this worker can run here now: installed, with credentials. */
  usable: boolean;
  /** What makes it usable when it is not (install it, or where its credentials go); null when usable. */
  fix: string | null;
}

/** How to install each built-in CLI (doctor and list_workers say it when one is missing). */
const INSTALL_HINT: Record<string, string> = {
  codex: 'npm install -g @openai/codex',
  'claude-code': 'npm install -g @anthropic-ai/claude-code',
  opencode: 'npm install -g opencode-ai',
  vscode: 'npm run vscode:package, install vscode-extension/lightworker-vscode-bridge.vsix in VS Code, open the repository there',
};

/** How to get a worker that is not installed. */
export function installHint(name: string): string {
  return INSTALL_HINT[name] ?? 'install it, or fix its command with `lightworker workers link`';
}

/** The fix for a worker that is missing, else for one without credentials (null: nothing to fix). */
export function workerFix(name: string, installed: boolean, auth: WorkerListing['auth']): string | null {
  if (!installed) return installHint(name);
  return auth.ok ? null : (auth.hint ?? 'give it credentials: see `lightworker doctor`');}

/** Which wire API each built-in worker speaks to a gateway (undefined: any). */
const WIRE: Record<string, string> = { codex: 'responses', 'claude-code': 'messages', opencode: 'chat' };

/** The first configured gateway this worker can speak to (for `auth = "gateway"` without a task). */
function gatewayFor(ctx: CommandContext, worker: string): GatewayKey | null {
  for (const [name, g] of Object.entries(ctx.engine.config.gateways)) {
    if (g.wire_api && WIRE[worker] && g.wire_api !== WIRE[worker]) continue;
    return { name, keyEnv: g.key_env, key: process.env[g.key_env] ?? null };
  }
  return null;
}

/**
 * What `worker` gets on a task that names no gateway (with `auth = "gateway"`: the first gateway it
 * can use). The mock worker needs nothing.
 */
export function workerAuth(ctx: CommandContext, worker: string): WorkerListing['auth'] {
  if (worker === 'mock') return { mode: 'none', source: 'none (no model)', ok: true, hint: null };
  const settings = workerAuthSettings(ctx.engine.config, worker);
  const a = resolveAuth(worker, settings, settings.auth === 'gateway' ? gatewayFor(ctx, worker) : null);
  return { mode: a.mode, source: a.source, ok: a.ok, hint: a.hint };
}

/**
 * What a worker authenticates with as `workers` and `doctor` report it: the adapter's own answer where it
 * knows better (an ACP agent: only its key variables reach it), unless the worker is set to a gateway.
 */
export function listingAuth(ctx: CommandContext, name: string, info: WorkerInfo): WorkerListing['auth'] {
  const shared = workerAuth(ctx, name);
  return info.auth && shared.mode !== 'gateway' ? info.auth : shared;
}

export const listWorkers = defineCommand({
  name: 'list_workers',
  description: 'Worker CLIs: installed, authenticated, why unusable.',
  input: z.strictObject({}),
  readOnly: true,
  async handler(ctx): Promise<{ workers: WorkerListing[]; gateways: { name: string; paused: string }[] }> {
    const names = allWorkerNames(ctx.engine);
    const workers = await Promise.all(
      names.map(async (name): Promise<WorkerListing> => {
        const adapter = resolveAdapter(ctx.engine, name);
        const info = await adapter.detect();
        const auth = listingAuth(ctx, name, info);
        return {
          ...info,
          authenticated: info.auth && auth === info.auth ? info.authenticated : (info.authenticated ?? (BUILTIN_ADAPTERS.has(name) ? auth.ok : null)),
          auth,
          usable: info.installed && auth.ok,
          fix: workerFix(name, info.installed, auth),
          builtin: BUILTIN_ADAPTERS.has(name),
          maxConcurrency: adapter.maxConcurrency,
          paused: workerWaitReason(ctx.engine.db, ctx.engine.config, name),
        };
      }),
    );
    // Gateways whose breaker is open or half-open: every worker routed through one waits for it.
    const gateways = Object.keys(ctx.engine.config.gateways).flatMap((name) => {
      const paused = workerWaitReason(ctx.engine.db, ctx.engine.config, gatewayKey(name));
      return paused ? [{ name, paused }] : [];
    });
    return { workers, gateways };
  },
});

const ARGV = z.array(z.string().max(4096)).min(1).max(64);

export const linkWorker = defineCommand({
  name: 'link_worker',
  description: 'Link a generic agent CLI by argv template ({prompt_file}, {workdir}, {session}; no prompt placeholder: the prompt on stdin); optional resume template.',
  input: z.strictObject({
    name: z.string().min(1).max(64),
    command_json: ARGV.describe('argv template: {prompt_file} (a private file holding the prompt), or none (the prompt on stdin); {prompt} puts it in argv, readable by every local user'),
    resume_json: ARGV.optional().describe('argv template for follow-ups, must contain {session}'),
    version_json: ARGV.optional().describe('argv that prints its version (no placeholders); without it workers/doctor run nothing of it'),
    max_concurrency: z.number().int().min(1).max(64).optional(),
  }),
  readOnly: false,
  handler(ctx, input): { worker: LinkedWorkerSpec; warning?: string } {
    // A linked command is run by later tasks: only a person says which programs run as workers.
    requirePersonOrAllowed(ctx, 'linking a worker');
    if (BUILTIN_ADAPTERS.has(input.name)) throw new AppError('conflict', `name: "${input.name}" is a built-in worker`, { field: 'name' });
    const spec: LinkedWorkerSpec = {
      name: input.name,
      command: input.command_json,
      ...(input.resume_json ? { resume: input.resume_json } : {}),
      ...(input.version_json ? { version: input.version_json } : {}),
      ...(input.max_concurrency ? { maxConcurrency: input.max_concurrency } : {}),
    };
    validateLinkedSpec(spec);
    refuseLiteralSecrets(input);
    ctx.engine.write(() => setSetting(ctx.engine.db, LINKED_PREFIX + spec.name, spec));
    return promptInArgv(spec) ? { worker: spec, warning: promptInArgvWarning(spec.name) } : { worker: spec };
  },
});

/**
 * A template is stored as written (settings, `workers --json`): redacting a secret in it would break the
 * command, so one that carries a secret is refused and nothing is stored.
 */
function refuseLiteralSecrets(input: { command_json: string[]; resume_json?: string[]; version_json?: string[] }): void {
  for (const field of ['command_json', 'resume_json', 'version_json'] as const) {
    const i = (input[field] ?? []).findIndex((arg) => containsSecret(arg));
    if (i >= 0) {
      throw new AppError('invalid_input', `${field}[${i}]: looks like a secret, and templates are stored as written; keep it in the agent CLI's own config or a wrapper script`, { field: `${field}[${i}]` });
    }
  }
}

export const unlinkWorker = defineCommand({
  name: 'unlink_worker',
  description: 'Remove a linked worker CLI (tasks already run keep their records).',
  input: z.strictObject({ name: z.string().min(1).max(64) }),
  readOnly: false,
  destructive: true,
  handler(ctx, input): { removed: string } {
    if (BUILTIN_ADAPTERS.has(input.name)) throw new AppError('conflict', `name: "${input.name}" is a built-in worker and cannot be unlinked`, { field: 'name' });
    if (!getSetting(ctx.engine.db, LINKED_PREFIX + input.name)) {
      const inConfig = ctx.engine.config.workers[input.name] !== undefined;
      throw new AppError('not_found', inConfig ? `name: "${input.name}" is defined in config.toml [workers.${input.name}]; remove it there` : `name: no linked worker "${input.name}"`, { field: 'name' });
    }
    ctx.engine.write(() => deleteSetting(ctx.engine.db, LINKED_PREFIX + input.name));
    return { removed: input.name };
  },
});


export const addGateway = defineCommand({
  name: 'add_gateway',
  description: 'Append a ready-made [gateways.NAME] block (a preset such as zcode-glm) to config.toml.',
  input: z.strictObject({
    preset: z.string().min(1).max(64),
    name: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ -').optional(),
    base_url: z.string().url().optional(),
    key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name').optional(),
  }),
  readOnly: false,
  handler(ctx, input): { gateway: string; path: string; block: string } {
    requirePersonOrAllowed(ctx, 'changing config.toml');
    const path = ctx.engine.home.config;
    const r = addGatewayPreset(path, input.preset, input);
    ctx.engine.config = r.config;
    return { gateway: r.name, path, block: r.block };
  },
});

export const WORKER_COMMANDS = [listWorkers, linkWorker, unlinkWorker, addGateway];
