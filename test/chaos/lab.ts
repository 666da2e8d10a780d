// One chaos "lab": a temp home and git repo, the chaos agent linked as a worker, and every process the
// suite starts tracked so that cleanup can end it by PID — and, for what those processes started, by the
// markers in /proc/*/environ (the lab's home path and its run id), never by name.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, runCli, type CliResult } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { findMarkedProcesses, killPids } from './observe.js';

export const AGENT = fileURLToPath(new URL('./fixtures/chaos-agent.mjs', import.meta.url));

export interface LabOptions {
  /** Extra config.toml text (appended after the suite's defaults). */
  config?: string;
  /** Extra environment for every CLI process of the lab (e.g. a gateway key). */
  env?: Record<string, string>;
  /** Secrets file handed to the chaos agent (`--secrets`). */
  secretsFile?: string;
  /** Turns of the chaos agent at once. */
  agentConcurrency?: number;
}

export interface Lab {
  root: string;
  home: string;
  repo: string;
  runId: string;
  /** The agent's ledger: one `taskid attempt pid` line per worker start. */
  runLog: string;
  env: Record<string, string>;
  cli: (args: string[], timeoutMs?: number) => Promise<CliResult>;
  /** A long-running `lightworker …` process (run, serve, mcp), tracked for cleanup. */
  start: (args: string[], stdin?: 'pipe' | 'ignore') => ChildProcess;
  children: Set<ChildProcess>;
  cleanup: () => Promise<void>;
}

const liveLabs = new Map<string, { home: string; children: Set<ChildProcess>; rmDir: () => void }>();

/** End every open lab at once (for SIGINT): kill by PID and marker only, then remove its folder. */
export function killAllLabs(): void {
  for (const [runId, l] of liveLabs) {
    for (const c of l.children) c.kill('SIGKILL');
    killPids(findMarkedProcesses({ runId, home: l.home }).map((p) => p.pid));
    l.rmDir();
  }
}

/** Create a lab and link the chaos agent as worker `chaos-agent`. */
export async function createLab(name: string, opts: LabOptions = {}): Promise<Lab> {
  const { dir, cleanup: rmDir } = tempDir(`lw-chaos-${name}-`);
  const home = join(dir, 'home');
  const repo = makeRepo(join(dir, 'repo'));
  const runId = randomUUID();
  const runLog = join(dir, 'runs.log');
  writeFileSync(runLog, '');
  const env: Record<string, string> = { LIGHTWORKER_HOME: home, CHAOS_LAB: runId, ...opts.env };
  const children = new Set<ChildProcess>();
  liveLabs.set(runId, { home, children, rmDir });
  const cli = (args: string[], timeoutMs = 60_000) => runCli(args, { home, cwd: repo, env, timeoutMs });
  const start = (args: string[], stdin: 'pipe' | 'ignore' = 'ignore') => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: repo, env: { ...process.env, ...env }, stdio: [stdin, 'pipe', 'pipe'] });
    children.add(child);
    child.once('exit', () => children.delete(child));
    child.stdout?.resume();
    child.stderr?.resume();
    return child;
  };
  const cleanup = async () => {
    for (const c of children) c.kill('SIGKILL');
    // Everything left that carries this lab's markers: workers, their leftovers, MCP background runners.
    killPids(findMarkedProcesses({ runId, home }).map((p) => p.pid));
    await new Promise((r) => setTimeout(r, 200));
    killPids(findMarkedProcesses({ runId, home }).map((p) => p.pid));
    liveLabs.delete(runId);
    rmDir();
  };
  try {
    await setUpHome(cli, home, runLog, runId, opts);
  } catch (e) {
    await cleanup();
    throw e;
  }
  return { root: dir, home, repo, runId, runLog, env, cli, start, children, cleanup };
}

async function setUpHome(cli: Lab['cli'], home: string, runLog: string, runId: string, opts: LabOptions): Promise<void> {
  const init = await cli(['init']);
  if (init.code !== 0) throw new Error(`init failed: ${init.stderr}`);
  writeFileSync(
    join(home, 'config.toml'),
    `[scheduler]\nkill_grace_ms = 1000\nmax_concurrency = 6\nper_root = 3\nper_repository = 6\nauto_resume_orphans = false\n\n[limits]\nretry_budget = 20\nmcp_mutations_per_minute = 10000\n\n${opts.config ?? ''}\n`,
  );
  const argv = [process.execPath, AGENT, '--log', runLog, '--run', runId, ...(opts.secretsFile ? ['--secrets', opts.secretsFile] : []), '{prompt}'];
  const link = await cli(['workers', 'link', 'chaos-agent', '--command-json', JSON.stringify(argv), '--max-concurrency', String(opts.agentConcurrency ?? 4)]);
  if (link.code !== 0) throw new Error(`workers link failed: ${link.stderr}`);
}

/** A task objective carrying the chaos agent's behaviour. */
export function chaosObjective(text: string, spec: Record<string, unknown>): string {
  return `${text} CHAOS_SPEC=${Buffer.from(JSON.stringify(spec)).toString('base64url')}`;
}

/** Run `fn` with a lab, cleaning it up whatever happens. */
export async function withLab<T>(name: string, opts: LabOptions, fn: (lab: Lab) => Promise<T>): Promise<T> {
  const lab = await createLab(name, opts);
  try {
    return await fn(lab);
  } finally {
    await lab.cleanup();
  }
}
