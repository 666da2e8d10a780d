import { AppError } from '../core/errors.js';
import type { StoreReader } from '../store/engine-handle.js';
import { getSetting, settingsWithPrefix } from '../store/settings.js';
import type { WorkerAdapter } from './adapter.js';
import { linkedAdapter, type LinkedWorkerSpec } from './linked.js';
import { mockAdapter } from './mock.js';
import { codexAdapter } from './codex.js';
import { claudeCodeAdapter } from './claude-code.js';
import { opencodeAdapter } from './opencode.js';
import { vscodeAdapter } from './vscode.js';
import { acpAdapter } from './acp/adapter.js';
import { ACP_AGENTS } from './acp/agents.js';

/** Built-in adapters by worker name. The real CLIs register here (codex, claude-code, opencode). */
export const BUILTIN_ADAPTERS = new Map<string, WorkerAdapter>(
  [mockAdapter, codexAdapter, claudeCodeAdapter, opencodeAdapter, vscodeAdapter(), ...ACP_AGENTS.map((def) => acpAdapter({ name: def.name, def }))].map((a) => [a.name, a]),
);

/** `[workers.NAME] acp = ["cmd", "args"]`: any other agent speaking the Agent Client Protocol. */
function configuredAcpNames(engine: StoreReader): string[] {
  return Object.entries(engine.config.workers).flatMap(([name, w]) => (w && 'acp' in w && w.acp && !BUILTIN_ADAPTERS.has(name) ? [name] : []));
}

export const LINKED_PREFIX = 'workers.linked.';

/** Linked workers: from `lightworker workers link` (settings) and config.toml [workers.NAME]. */
export function linkedSpecs(engine: StoreReader): LinkedWorkerSpec[] {
  const fromDb = settingsWithPrefix<LinkedWorkerSpec>(engine.db, LINKED_PREFIX).map((s) => s.value);
  // A [workers.NAME] block without `command` only sets how a worker authenticates ([workers.vscode]
  // configures the built-in bridge worker): only entries with a command are linked CLIs.
  const fromConfig = Object.entries(engine.config.workers).flatMap(([name, w]) =>
    w && 'command' in w && w.command && !BUILTIN_ADAPTERS.has(name) ? [{ name, command: w.command, resume: w.resume, version: w.version, maxConcurrency: w.max_concurrency, readOnlySandbox: w.read_only_sandbox }] : [],
  );
  const seen = new Set(fromDb.map((s) => s.name));
  return [...fromDb, ...fromConfig.filter((s) => !seen.has(s.name))];
}

/**
 * A built-in CLI adapter running the binary config.toml names (`[workers.<name>] command`: the binary and
 * leading arguments, before the adapter's own) and, when set there, its own max_concurrency.
 */
function withConfiguredCommand(adapter: WorkerAdapter, command: readonly string[], maxConcurrency: number | undefined): WorkerAdapter {
  return {
    ...adapter,
    maxConcurrency: maxConcurrency ?? adapter.maxConcurrency,
    detect: () => adapter.detect(command),
    buildSpawn: (turn) => adapter.buildSpawn({ ...turn, command }),
  };
}

/** The adapter for a worker name, or `worker_missing`. */
export function resolveAdapter(engine: StoreReader, name: string): WorkerAdapter {
  if (name === 'vscode') return vscodeAdapter(engine.config.workers.vscode);
  const builtin = BUILTIN_ADAPTERS.get(name);
  const configured = engine.config.workers[name];
  if (builtin) {
    // A block without `command` only sets how the worker authenticates (credentials.ts).
    const command = configured && 'command' in configured ? configured.command : undefined;
    return command ? withConfiguredCommand(builtin, command, configured?.max_concurrency) : builtin;
  }
  const stored = getSetting<LinkedWorkerSpec>(engine.db, LINKED_PREFIX + name);
  if (stored) return linkedAdapter(stored);
  const cfg = engine.config.workers[name];
  if (cfg && 'acp' in cfg && cfg.acp) return acpAdapter({ name, argv: cfg.acp }, { maxConcurrency: cfg.max_concurrency });
  if (cfg?.command) return linkedAdapter({ name, command: cfg.command, resume: cfg.resume, version: cfg.version, maxConcurrency: cfg.max_concurrency, readOnlySandbox: cfg.read_only_sandbox });
  throw new AppError('worker_missing', `no worker named "${name}" (built in: ${[...BUILTIN_ADAPTERS.keys()].join(', ')}; link others with \`lightworker workers link\`)`);
}

export function allWorkerNames(engine: StoreReader): string[] {
  return [...new Set([...BUILTIN_ADAPTERS.keys(), ...linkedSpecs(engine).map((s) => s.name), ...configuredAcpNames(engine)])];
}
