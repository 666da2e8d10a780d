// The chaos suite as one function: every scenario in turn, each in its own temp home, and the figures
// as a table. `npm run chaos` (run.ts) and the reduced run inside `npm test` both call runChaos.
import { runAcceptKills, type AcceptKillFigures } from './accept-kills.js';
import { runCompete, type CompeteFigures } from './compete.js';
import { runCustody, type CustodyFigures } from './custody.js';
import { ENDINGS, runEscape, type EscapeFigures } from './escape.js';
import { runHttpFuzz, type HttpFuzzFigures } from './http-fuzz.js';
import { runKills, type KillFigures } from './kills.js';
import { runMcpFuzz, type McpFuzzFigures } from './mcp-fuzz.js';
import { percentile } from './observe.js';
import { runSecrets, type SecretFigures } from './secrets.js';
import { SHAPES } from '../helpers/escapes.js';

export interface ChaosOptions {
  kills: number;
  /** `run` processes competing during the kills (≥ 2). */
  leaders: number;
  /** `run` processes started at once in the competing-schedulers scenario. */
  schedulers: number;
  mcp: number;
  http: number;
  /** Accepts killed at an aimed step. */
  acceptKills: number;
  /** Times each task ending is tried on a worker leaving six escaped processes (0: not run). */
  escapeRounds: number;
  seed: number;
  /** Hard timeout of each kill-scenario task, seconds. */
  taskTimeoutS: number;
  /** Hostile-worker tasks of the custody scenario. */
  custody: number;
  log: (line: string) => void;
}

export interface ChaosReport {
  options: Omit<ChaosOptions, 'log'>;
  kills: KillFigures;
  compete: CompeteFigures;
  mcp: McpFuzzFigures;
  http: HttpFuzzFigures;
  secrets: SecretFigures;
  accepts: AcceptKillFigures;
  custody: CustodyFigures;
  escape: EscapeFigures;
  /** The figures that must be zero, by name. */
  failures: Record<string, number>;
  durationS: number;
}

export const DEFAULTS: Omit<ChaosOptions, 'log'> = { kills: 100, leaders: 2, schedulers: 4, mcp: 10_000, http: 2000, acceptKills: 24, escapeRounds: 1, seed: 1, taskTimeoutS: 30, custody: 50 };

/** Run every scenario and collect the figures; never throws for a bad figure (only for a broken harness). */
export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  o.log(`chaos: ${o.kills} leader kills …`);
  const kills = await runKills({ kills: o.kills, leaders: o.leaders, taskTimeoutS: o.taskTimeoutS, seed: o.seed, log: o.log });
  o.log(`chaos: ${o.schedulers} competing schedulers …`);
  const compete = await runCompete({ schedulers: o.schedulers, tasksPerWave: 12, seed: o.seed });
  o.log(`chaos: ${o.mcp} MCP fuzz messages …`);
  const mcp = await runMcpFuzz({ messages: o.mcp, seed: o.seed, log: o.log });
  o.log(`chaos: ${o.http} HTTP fuzz requests …`);
  const http = await runHttpFuzz({ requests: o.http, seed: o.seed, log: o.log });
  o.log('chaos: secret corpus …');
  const secrets = await runSecrets({ seed: o.seed, log: o.log });
  o.log(`chaos: ${o.acceptKills} accepts killed at an aimed step …`);
  const accepts = await runAcceptKills({ kills: o.acceptKills, seed: o.seed, log: o.log });
  o.log(`chaos: custody, ${o.custody} hostile-worker tasks …`);
  const custody = await runCustody({ runs: o.custody, seed: o.seed, log: o.log });
  o.log(`chaos: six escape shapes × ${ENDINGS.length} endings × ${o.escapeRounds} …`);
  const escape = await runEscape({ rounds: o.escapeRounds, log: o.log });
  const failures = {
    'double runs': kills.doubleRuns + compete.doubleRuns,
    'lost tasks': kills.lostTasks + compete.lostTasks,
    survivors: kills.survivors + compete.survivors,
    'stuck tasks': kills.stuckTasks,
    'takeover timeouts': kills.takeoverTimeouts,
    'audit verify failures': kills.auditOk ? 0 : 1,
    crashes: mcp.crashes + http.crashes,
    'unanswered MCP requests': mcp.unanswered + (mcp.finalToolsList ? 0 : 1),
    'non-JSON-RPC MCP stdout lines': mcp.badStdout,
    'HTTP stack traces': http.stackTraces,
    'HTTP writes accepted without auth': http.unauthorizedWrites + (http.taskCountChanged ? 1 : 0),
    'HTTP reads served without auth': http.unauthorizedReads,
    'HTTP token handed out without auth': http.tokenDisclosures,
    leaks: secrets.leaks,
    'half-applied accepts': accepts.halfApplied + accepts.reacceptFailures,
    'bytes changed in the user repository': custody.bytesChanged,
    'writes approved without a person (MCP)': custody.mcpWritesWithoutPerson,
    'agent turns started by workers/doctor': custody.probeAgentStarts,
    'escaped survivors': escape.total,
  };
  const { log: _log, ...options } = o;
  return { options, kills, compete, mcp, http, secrets, accepts, custody, escape, failures, durationS: Math.round((Date.now() - started) / 1000) };
}

/** The figures as a Markdown table. */
export function renderTable(r: ChaosReport): string {
  const p = (q: number) => percentile(r.kills.takeoverMs, q);
  const ms = (v: number | null) => (v === null ? 'n/a' : `${v} ms`);
  const rows: [string, string | number][] = [
    ['leader kills (kill -9)', `${r.kills.kills} (${r.options.leaders} competing \`run\` processes)`],
    ['tasks / worker starts (kill scenario)', `${r.kills.tasks} / ${r.kills.workerStarts}`],
    ['competing schedulers', `${r.compete.schedulers} at once, ${r.compete.tasks} tasks, ${r.compete.workerStarts} worker starts`],
    ['**double runs**', r.failures['double runs']],
    ['**lost tasks**', r.failures['lost tasks']],
    ['**surviving processes**', process.platform === 'linux' ? r.failures.survivors : `${r.failures.survivors} (not measured: no /proc on ${process.platform})`],
    ['**stuck tasks**', r.failures['stuck tasks']],
    ['takeover p50 / p95', `${ms(p(50))} / ${ms(p(95))} (${r.kills.takeoverMs.length} samples)`],
    ['**takeover timeouts** (> 30 s)', r.failures['takeover timeouts']],
    ['**audit verify failures**', r.failures['audit verify failures']],
    ['MCP fuzz messages', `${r.mcp.messages} (${r.mcp.expected} well-formed requests)`],
    ['HTTP fuzz requests', r.http.requests],
    ['**crashes** (MCP + HTTP)', r.failures.crashes],
    ['**unanswered MCP requests**', r.failures['unanswered MCP requests']],
    ['**non-JSON-RPC MCP stdout lines**', r.failures['non-JSON-RPC MCP stdout lines']],
    ['HTTP 5xx answers', r.http.serverErrors],
    ['**HTTP stack traces**', r.failures['HTTP stack traces']],
    ['**HTTP writes accepted without auth**', r.failures['HTTP writes accepted without auth']],
    ['**HTTP task reads served without auth**', r.failures['HTTP reads served without auth']],
    ['**HTTP console token handed out without auth**', r.failures['HTTP token handed out without auth']],
    ['secret corpus', `${r.secrets.secrets} secrets, ${r.secrets.tasks} tasks; context pack with a credential ${r.secrets.contextPackRefused ? 'refused' : 'ACCEPTED'}`],
    ['**leaks** (secret × place)', r.failures.leaks],
    ['accepts killed at an aimed step', `${r.accepts.kills} (${r.accepts.sigkills} SIGKILL, ${r.accepts.sigints} Ctrl-C); ${r.accepts.finished} finished, ${r.accepts.undone} undone and accepted again`],
    ['**half-applied accepts**', r.failures['half-applied accepts']],
    ['custody: hostile-worker tasks', `${r.custody.runs} (${Object.entries(r.custody.byKind).map(([k, n]) => `${k} ${n}`).join(', ')}); ${r.custody.restoredTasks} put something back`],
    ['**bytes changed in the user repository** (and its origin) after the task', r.failures['bytes changed in the user repository']],
    ['**writes approved without a person** (MCP delegate_task, auto_execute)', `${r.failures['writes approved without a person (MCP)']} of ${r.custody.mcpSubmitted}`],
    ['**agent turns started by `workers --json` / `doctor`**', r.failures['agent turns started by workers/doctor']],
    ['escape tasks (six escaped processes each)', `${r.escape.tasks} (${ENDINGS.length} endings × ${r.options.escapeRounds}); held by ${Object.entries(r.escape.heldBy).map(([k, n]) => `${k} ${n}`).join(', ') || 'n/a'}`],
    ...SHAPES.map((shape, i): [string, string] => [`survivors: ${shape}`, ENDINGS.map((e) => `${e} ${r.escape.survivors[e][i]}`).join(', ')]),
    ['**escaped survivors** (shapes × endings)', process.platform === 'linux' ? r.failures['escaped survivors'] : `${r.failures['escaped survivors']} (not measured: no /proc on ${process.platform})`],
  ];
  return ['| figure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}

/** Every scenario's notes, one bullet each. */
export function renderNotes(r: ChaosReport): string[] {
  const tag = (name: string, notes: string[]) => notes.map((n) => `- ${name}: ${n}`);
  return [
    ...tag('kills', r.kills.notes),
    ...tag('compete', r.compete.notes),
    ...tag('mcp', r.mcp.notes),
    ...tag('http', r.http.notes),
    ...tag('secrets', r.secrets.notes),
    ...tag('accepts', r.accepts.notes),
    ...tag('custody', r.custody.notes),
    ...tag('escape', r.escape.notes),
    ...Object.entries(r.secrets.byLabel).map(([label, n]) => `- secrets: ${label} leaked in ${n} places`),
  ];
}

/** True when every figure that must be zero is zero. */
export function passed(r: ChaosReport): boolean {
  return Object.values(r.failures).every((v) => v === 0);
}
