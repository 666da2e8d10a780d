import { existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError } from '../../core/errors.js';
import { registerSecretValues } from '../../core/secret-values.js';
import { pickEnv } from '../../platform/proc/env.js';
import { RATE_LIMIT_PATTERN, type NormalizedEvent, type SpawnSpec, type StreamParser, type TurnOutcome, type WorkerAdapter, type WorkerInfo, type WorkerTurn } from '../adapter.js';
import { cliMissingReason, probeVersion, resolveCliCommand, versionNumber } from '../cli-detect.js';
import { probeVersionLine } from '../probe.js';
import { providerModel } from '../routing.js';
import type { AcpAgentDef } from './agents.js';
import type { DriverLine, DriverSpec } from './spec.js';

/**
 * A worker speaking the Agent Client Protocol: the runner spawns LightWorker's ACP driver
 * (out/main/acp-driver.js, driver.ts), which starts the agent, runs the turn over ACP and prints
 * normalized events. Read-only turns run in a snapshot (the agent's own tools could write), and writes
 * through LightWorker's fs methods are refused there too.
 */

/** The driver's path: next to the bundled entries, or the build of a source checkout. */
export function driverPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'acp-driver.js'), join(here, '..', '..', '..', 'out', 'main', 'acp-driver.js')];
  return candidates.find((p) => existsSync(p)) ?? candidates[0];
}

function nodeCommand(): { command: string; env: Record<string, string> } {
  return { command: process.execPath, env: process.versions.electron ? { ELECTRON_RUN_AS_NODE: '1' } : {} };
}

/** How an ACP worker is defined: a named agent, or a configured argv (`[workers.NAME] acp = [...]`). */
export type AcpWorker = { name: string; def: AcpAgentDef; argv?: undefined } | { name: string; def?: undefined; argv: readonly string[] };

function agentArgv(w: AcpWorker, configured: readonly string[] | null | undefined): { bin: string; args: string[] } | null {
  if (w.def) {
    const cli = resolveCliCommand(w.def.bin, configured);
    return cli ? { bin: cli.bin, args: [...cli.prefix, ...w.def.args] } : null;
  }
  const cli = resolveCliCommand(w.argv[0], null);
  return cli ? { bin: cli.bin, args: [...w.argv.slice(1)] } : null;
}

function buildSpawn(w: AcpWorker, turn: WorkerTurn): SpawnSpec {
  const agent = agentArgv(w, turn.command);
  if (!agent) throw new AppError('worker_missing', `worker ${w.name}: ${w.def ? cliMissingReason(w.name, w.def.bin, turn.command, w.def.install) : `${w.argv[0]} not found (config.toml [workers.${w.name}] acp)`}`);
  const home = join(turn.runDir, 'acp-home');
  mkdirSync(home, { recursive: true });
  const extra = w.def?.configure?.(turn, home) ?? {};
  const keys = !turn.gateway && w.def ? pickEnv(w.def.keyVars) : {};
  registerSecretValues(Object.values(keys));
  const env = { ...turn.baseEnv, HOME: home, ...keys, ...(extra.env ?? {}) };
  const spec: DriverSpec = {
    agent: { command: agent.bin, args: [...agent.args, ...(extra.args ?? [])], env },
    cwd: turn.workdir,
    prompt: turn.prompt,
    sandbox: turn.sandbox,
    allowedPaths: turn.task.allowedPaths,
    resumeSessionId: turn.resumeSessionId,
    runDir: turn.runDir,
    model: providerModel(turn),
    modes: w.def?.modes(turn.sandbox) ?? [],
    serveReads: w.def?.serveReads !== false,
    loadSession: !w.def?.noLoad,
    settleMs: w.def?.settleMs,
    permission: turn.permissionServer,
  };
  const node = nodeCommand();
  return { command: node.command, args: [driverPath()], env: { ...turn.baseEnv, ...node.env }, cwd: turn.workdir, stdin: JSON.stringify(spec) };
}

function createParser(turn: WorkerTurn): StreamParser {
  let sessionId: string | null = turn.resumeSessionId;
  let end: Extract<DriverLine, { type: 'acp.end' }> | null = null;
  let failure: Extract<DriverLine, { type: 'acp.error' }> | null = null;
  return {
    line(line: string): NormalizedEvent[] {
      const e = JSON.parse(line) as DriverLine;
      if (e.type === 'worker.started') sessionId = e.sessionId;
      if (e.type === 'acp.end') {
        end = e;
        sessionId = e.sessionId ?? sessionId;
        if (e.interrupted) return [{ type: 'worker.warning', message: 'the turn stopped to ask a person for a permission' }];
        return e.stopReason === 'end_turn' ? [{ type: 'worker.completed', text: e.text }] : [{ type: 'worker.failed', message: `the agent stopped: ${e.stopReason}` }];
      }
      if (e.type === 'acp.error') {
        failure = e;
        return [{ type: 'worker.failed', message: e.message, rateLimited: e.rateLimited }];
      }
      return typeof e.type === 'string' && e.type.startsWith('worker.') ? [e] : [];
    },
    finish(exitCode, stderrTail): TurnOutcome {
      const done = end as typeof end;
      if (exitCode === 0 && done && (done.stopReason === 'end_turn' || done.interrupted)) return { ok: true, finalText: done.text, sessionId };
      const err = failure as typeof failure;
      const tail = stderrTail.trim().slice(-800);
      const message = err?.message ?? (done ? `the agent stopped: ${done.stopReason}` : `the ACP driver exited with code ${exitCode}${tail ? `: ${tail}` : ''}`);
      // An agent may end its process on a provider error (Gemini CLI on a 429): what it said on stderr tells why.
      const rateLimited = err?.rateLimited || RATE_LIMIT_PATTERN.test(message) || RATE_LIMIT_PATTERN.test(tail);
      const said = tail && !message.includes(tail) ? `; the agent said: ${tail.slice(-500)}` : '';
      return { ok: false, finalText: done?.text ?? null, sessionId, error: { code: rateLimited ? 'rate_limited' : 'worker_failed', message: `${message}${said}` } };
    },
  };
}

/** The version of an npm-installed binary from its package.json (runs nothing), else its `--version`. */
async function versionOf(bin: string, prefix: string[]): Promise<string | null> {
  try {
    let dir = dirname(realpathSync(bin));
    for (let i = 0; i < 6 && dir !== dirname(dir); i++, dir = dirname(dir)) {
      const pkg = join(dir, 'package.json');
      if (!existsSync(pkg)) continue;
      const v = (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: string }).version;
      if (v) return v;
    }
  } catch {
    // not a package: ask the binary
  }
  return versionNumber((await probeVersion(bin, 10_000, prefix)).line);
}

/** initialize only (no session, no model call), under the probe rules: the agent's ACP version, capabilities and auth methods. */
export async function probeAcp(bin: string, args: string[]): Promise<{ summary: string | null; loadSession: boolean; why: string }> {
  const r = await probeVersionLine(nodeCommand().command, [driverPath(), '--probe', bin, ...args], { timeoutMs: 25_000, waitMs: 26_000, lane: 'agent' });
  if (!r.line) return { summary: null, loadSession: false, why: r.unknown ?? 'no answer' };
  try {
    const p = JSON.parse(r.line) as { v?: number; load?: boolean; resume?: boolean; auth?: string; type?: string; message?: string };
    if (p.type === 'acp.error') return { summary: null, loadSession: false, why: String(p.message) };
    const follow = p.load ? 'session/load' : p.resume ? 'session/resume' : 'fresh session + summary';
    const auth = p.auth ? `auth methods ${p.auth}` : 'no auth methods';
    return { summary: `ACP v${p.v}; follow-ups: ${follow}; ${auth}`, loadSession: Boolean(p.load || p.resume), why: '' };
  } catch {
    return { summary: null, loadSession: false, why: `not ACP: ${r.line.slice(0, 120)}` };
  }
}

/**
 * What an ACP agent's turn authenticates with without a gateway: only its key variables reach it (it runs
 * with its own config home, so a login in your HOME is never used). Checked without running it.
 */
export function acpAuth(w: AcpWorker, env: NodeJS.ProcessEnv = process.env): NonNullable<WorkerInfo['auth']> {
  if (!w.def) return { mode: 'none', source: 'its own config', ok: true, hint: null };
  const found = w.def.keyVars.filter((k) => env[k]);
  if (found.length) return { mode: 'env', source: `env ${found.join(', ')}`, ok: true, hint: null };
  const gateway = w.def.notProven ? '' : ', or route it through a gateway ([gateways.NAME], --gateway NAME)';
  return { mode: 'env', source: 'env (none set)', ok: false, hint: `export ${w.def.keyVars.join(' or ')}${gateway}; a login in your HOME is not used (each turn has its own config home)` };
}

async function detect(w: AcpWorker, configured?: readonly string[] | null): Promise<WorkerInfo> {
  const capabilities = { sessions: true, structuredOutput: false, sandboxModes: ['read-only (snapshot)', 'workspace-write'] };
  const agent = agentArgv(w, configured);
  const auth = acpAuth(w);
  const base = { name: w.name, authenticated: w.def ? auth.ok : null, auth, capabilities };
  if (!agent) return { ...base, installed: false, version: null, reason: w.def ? cliMissingReason(w.name, w.def.bin, configured, w.def.install) : `${w.argv[0]} not found (config.toml [workers.${w.name}] acp)`, command: null };
  const [version, acp] = await Promise.all([versionOf(agent.bin, w.def ? [] : []), probeAcp(agent.bin, agent.args)]);
  // The agent offers session/load, but LightWorker does not use a broken one: say what follow-ups really do.
  const summary = acp.summary && w.def?.noLoad ? acp.summary.replace('follow-ups: session/load', 'follow-ups: fresh session + summary') : acp.summary;
  const note = summary ?? `ACP initialize failed: ${acp.why}`;
  return {
    ...base, installed: true, version, versionNote: version ? undefined : 'version unknown: no package.json or --version',
    capabilities: { ...capabilities, sessions: acp.summary ? acp.loadSession && !w.def?.noLoad : true },
    acp: note + (w.def?.noLoad ? `; session/load not used: ${w.def.noLoad}` : '') + (w.def?.notProven ? `; not proven here: ${w.def.notProven}` : ''),
    reason: acp.summary || acp.why.startsWith('still probing') ? null : note,
    command: agent.bin,
  };
}

/** The WorkerAdapter of one ACP worker. */
export function acpAdapter(w: AcpWorker, opts: { maxConcurrency?: number; command?: readonly string[] } = {}): WorkerAdapter {
  return {
    name: w.name,
    maxConcurrency: opts.maxConcurrency ?? 2,
    permissionTool: true,
    detect: (command) => detect(w, command ?? opts.command),
    buildSpawn: async (turn) => buildSpawn(w, { ...turn, command: turn.command ?? opts.command }),
    createParser,
  };
}
