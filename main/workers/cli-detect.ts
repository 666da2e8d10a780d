import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../core/errors.js';
import type { WorkerInfo } from './adapter.js';
import { PROBE_TIMEOUT_MS, probeVersionLine, type VersionProbe } from './probe.js';
import { findOnPath } from './which.js';

/**
 * Finding and probing the real agent CLIs without running a model: the binary (this checkout's
 * node_modules/.bin first, then PATH) and its `--version` under the probe rules (probe.ts).
 */

/** node_modules/.bin/<name> of the nearest enclosing checkout of this module, else PATH. */
export function findCliBinary(name: string): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = findOnPath(join(dir, 'node_modules', '.bin', name));
    if (candidate) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return findOnPath(name);
}

/** The binary and leading arguments a built-in CLI adapter runs. */
export interface CliCommand {
  bin: string;
  /** Arguments before the adapter's own (from a configured command). */
  prefix: string[];
}

/**
 * What a built-in adapter runs: the configured argv (`[workers.<worker>] command` in config.toml: its first
 * element a path or a name on PATH, the rest leading arguments) when given, else `binName` found as
 * {@link findCliBinary} does. Null when that binary is not there.
 */
export function resolveCliCommand(binName: string, configured?: readonly string[] | null): CliCommand | null {
  if (configured?.length) {
    const bin = findOnPath(configured[0]);
    return bin ? { bin, prefix: configured.slice(1) } : null;
  }
  const bin = findCliBinary(binName);
  return bin ? { bin, prefix: [] } : null;
}

/** Why a built-in CLI cannot run: the configured command is missing, or the binary is not installed. */
export function cliMissingReason(worker: string, binName: string, configured: readonly string[] | null | undefined, install: string): string {
  if (configured?.length) return `${configured[0]} not found or not executable (config.toml [workers.${worker}] command)`;
  return `${binName} not found (${install})`;
}

/** {@link resolveCliCommand} for a turn: a missing binary is a `worker_missing` error saying which. */
export function requireCliCommand(worker: string, binName: string, configured: readonly string[] | null | undefined): CliCommand {
  const cli = resolveCliCommand(binName, configured);
  if (!cli) throw new AppError('worker_missing', `worker ${worker}: ${cliMissingReason(worker, binName, configured, 'node_modules/.bin or PATH')}`);
  return cli;
}

/**
 * `<bin> [prefix] --version` under the probe rules (probe.ts: an empty temporary folder as cwd and HOME,
 * the minimal worker environment, a short timeout, cached per binary). First line of stdout, or why not.
 */
export function probeVersion(bin: string, timeoutMs = PROBE_TIMEOUT_MS, prefix: string[] = []): Promise<VersionProbe> {
  return probeVersionLine(bin, [...prefix, '--version'], { timeoutMs });
}

/**
 * What a built-in CLI adapter's `detect` reports: the binary (configured or found), its version from the
 * probe, and "version unknown" with the probe's reason when it gave none.
 */
export async function detectCli(worker: string, binName: string, command: readonly string[] | null | undefined, install: string, capabilities: WorkerInfo['capabilities']): Promise<WorkerInfo> {
  const cli = resolveCliCommand(binName, command);
  if (!cli) return { name: worker, installed: false, version: null, authenticated: null, capabilities, reason: cliMissingReason(worker, binName, command, install), command: null };
  const probe = await probeVersion(cli.bin, PROBE_TIMEOUT_MS, cli.prefix);
  const version = versionNumber(probe.line);
  if (version) return { name: worker, installed: true, version, authenticated: null, capabilities, reason: null, command: cli.bin };
  // A probe still running is no fault of the CLI; one that failed says the binary may not work.
  const failed = probe.unknown !== null && !probe.unknown.startsWith('still probing');
  return { name: worker, installed: true, version: null, versionNote: `version unknown: ${probe.unknown}`, authenticated: null, capabilities, reason: failed ? `${cli.bin} --version did not answer: ${probe.unknown}` : null, command: cli.bin };
}

/** The version number in a `--version` line ("codex-cli 0.169.0" → "0.169.0"). */
export function versionNumber(line: string | null): string | null {
  if (!line) return null;
  return /\d+\.\d+\.\d+[\w.-]*/.exec(line)?.[0] ?? line;
}
