// The chaos suite as one function: every scenario in turn, each in its own temp home, and the figures
// as a table. `npm run chaos` (run.ts) and the reduced run inside `npm test` both call runChaos.
import { runAcceptKills, type AcceptKillFigures } from './accept-kills.js';
import { runCompete, type CompeteFigures } from './compete.js';
import { runCustody, type CustodyFigures } from './custody.js';
import { runDamage, type DamageFigures } from './damage.js';
import { ENDINGS, runEscape, type EscapeFigures } from './escape.js';
import { runFleetPg, type FleetPgFigures, type FleetPgOptions } from './fleet-pg.js';
import { runFloods, type FloodFigures } from './floods.js';
import { runGuards, type GuardsFigures } from './guards.js';
import { runHttpFuzz, type HttpFuzzFigures } from './http-fuzz.js';
import { runKills, type KillFigures } from './kills.js';
import { runManyClients, type ManyClientsFigures } from './many-clients.js';
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
  /** `lightworker mcp` processes delegating and waiting at once on one home. */
  mcpClients: number;
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
  /** Tasks in each home whose store is deleted, truncated or corrupted under its leader. */
  damageTasks: number;
  /** MB of the flood of 100-character lines (the `yes` flood prints a fifth of it); default 200. */
  floodMb?: number;
  /** Runaway (endless tokens), rate-limited and flapping-worker tasks each, of the guards scenario (0: not run). */
  guards?: number;
  log: (line: string) => void;
}

export interface ChaosReport {
  options: Omit<ChaosOptions, 'log'>;
  kills: KillFigures;
  compete: CompeteFigures;
  mcp: McpFuzzFigures;
  manyClients: ManyClientsFigures;
  http: HttpFuzzFigures;
  secrets: SecretFigures;
  accepts: AcceptKillFigures;
  custody: CustodyFigures;
  damage: DamageFigures;
  escape: EscapeFigures;
  floods: FloodFigures;
  guards: GuardsFigures | null;
  /** The figures that must be zero, by name. */
  failures: Record<string, number>;
  durationS: number;
}

export const DEFAULTS: Omit<ChaosOptions, 'log'> = { kills: 100, leaders: 2, schedulers: 4, mcp: 10_000, mcpClients: 100, http: 2000, acceptKills: 24, escapeRounds: 1, seed: 1, taskTimeoutS: 30, custody: 50, damageTasks: 50, floodMb: 200, guards: 8 };

/** Run every scenario and collect the figures; never throws for a bad figure (only for a broken harness). */
export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  o.log(`chaos: ${o.kills} leader kills …`);
  const kills = await runKills({ kills: o.kills, leaders: o.leaders, taskTimeoutS: o.taskTimeoutS, seed: o.seed, log: o.log });
  o.log(`chaos: ${o.schedulers} competing schedulers …`);
  const compete = await runCompete({ schedulers: o.schedulers, tasksPerWave: 12, seed: o.seed });
  o.log(`chaos: ${o.mcp} MCP fuzz messages …`);
  const mcp = await runMcpFuzz({ messages: o.mcp, seed: o.seed, log: o.log });
  o.log(`chaos: ${o.mcpClients} MCP clients at once …`);
  const manyClients = await runManyClients({ clients: o.mcpClients, log: o.log });
  o.log(`chaos: ${o.http} HTTP fuzz requests …`);
  const http = await runHttpFuzz({ requests: o.http, seed: o.seed, log: o.log });
  o.log('chaos: secret corpus …');
  const secrets = await runSecrets({ seed: o.seed, log: o.log });
  o.log(`chaos: ${o.acceptKills} accepts killed at an aimed step …`);
  const accepts = await runAcceptKills({ kills: o.acceptKills, seed: o.seed, log: o.log });
  o.log(`chaos: custody, ${o.custody} hostile-worker tasks …`);
  const custody = await runCustody({ runs: o.custody, seed: o.seed, log: o.log });
  o.log('chaos: a full disk and a damaged store …');
  const damage = await runDamage({ tasks: o.damageTasks, log: o.log });
  o.log(`chaos: six escape shapes × ${ENDINGS.length} endings × ${o.escapeRounds} …`);
  const escape = await runEscape({ rounds: o.escapeRounds, log: o.log });
  const floodMb = o.floodMb ?? DEFAULTS.floodMb!;
  o.log(`chaos: output floods (100k lines, ${floodMb} MB, ${Math.ceil(floodMb / 5)} MB of \`yes\`) …`);
  const floods = await runFloods({ lines: 100_000, floodMb, yesMb: Math.ceil(floodMb / 5), log: o.log });
  const guardsN = o.guards ?? DEFAULTS.guards!;
  o.log(`chaos: guards, ${guardsN} runaway, rate-limited and flapping-worker tasks each …`);
  const guards = guardsN > 0 ? await runGuards({ runaways: guardsN, limited: guardsN, flaps: guardsN, log: o.log }) : null;
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
    'refused MCP calls (many clients)': manyClients.refused,
    'internal MCP answers (many clients)': manyClients.internal,
    'false orphans (many clients)': manyClients.falseOrphans + manyClients.notCompleted,
    'lease moves from a live leader': manyClients.leaseMoves,
    'HTTP stack traces': http.stackTraces,
    'HTTP writes accepted without auth': http.unauthorizedWrites + (http.taskCountChanged ? 1 : 0),
    'HTTP reads served without auth': http.unauthorizedReads,
    'HTTP token handed out without auth': http.tokenDisclosures,
    leaks: secrets.leaks,
    'half-applied accepts': accepts.halfApplied + accepts.reacceptFailures,
    'bytes changed in the user repository': custody.bytesChanged,
    'writes approved without a person (MCP)': custody.mcpWritesWithoutPerson,
    'agent turns started by workers/doctor': custody.probeAgentStarts,
    'stuck tasks (full disk)': damage.stuckTasks,
    'tasks started while the store was full': damage.startedWhileFull,
    'full disk not said': damage.fullUnsaid,
    'unnoticed store damage': damage.unnoticed,
    'survivors (store damage)': damage.survivors,
    'escaped survivors': escape.total,
    'floods stored past their caps': floods.cases.filter((c) => c.outputRows > floods.maxEvents || c.rawLogBytes > floods.rawLogBytes + 4096).length,
    'flooded tasks that did not end properly': floods.improperEnds,
    'runaways not stopped at their budget': guards ? guards.notStopped : 0,
    'survivors (runaways)': guards?.survivors ?? 0,
    'tasks failed by rate limits': guards?.rateLimitFailures ?? 0,
    'retries spent on rate limits': guards ? guards.retriesSpent + guards.gatewayRetriesSpent : 0,
    'tasks failed by gateway rate limits': guards?.gatewayLimitFailures ?? 0,
    'starts on a paused gateway': guards?.startsOnPausedGateway ?? 0,
    'starts while a breaker was open': guards?.startsWhileOpen ?? 0,
    'task trees not stopped at their total': guards?.treesNotStopped ?? 0,
    'starts in a tree past its total': guards?.treeStartsAfterTotal ?? 0,
    'tasks started below the memory floor': guards?.memoryStartsBelowFloor ?? 0,
  };
  const { log: _log, ...options } = o;
  return { options, kills, compete, mcp, manyClients, http, secrets, accepts, custody, damage, escape, floods, guards, failures, durationS: Math.round((Date.now() - started) / 1000) };
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
    ['MCP clients at once (delegate + wait)', manyClientsRow(r.manyClients)],
    ['**refused MCP calls** (many clients)', r.failures['refused MCP calls (many clients)']],
    ['**internal MCP answers** (many clients, + stack traces)', r.failures['internal MCP answers (many clients)']],
    ['**false orphans** (many clients, + tasks not completed)', r.failures['false orphans (many clients)']],
    ['**lease moves from a live leader**', r.failures['lease moves from a live leader']],
    ['memory per MCP server (RSS / PSS, median)', memoryRow(r.manyClients)],
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
    ['full disk (home on a tmpfs filled while 3 tasks run)', r.damage.fullDiskRun ? `${r.damage.fullDiskTasks} tasks` : `not run: ${r.damage.fullDiskSkipped}`],
    ['**stuck tasks** (full disk, 30 s after space returned)', r.failures['stuck tasks (full disk)']],
    ['**tasks started while the store was full**', r.failures['tasks started while the store was full']],
    ['**full disk not said** (what is full, where)', r.failures['full disk not said']],
    ['store damage under a leader', `${r.damage.harms.join(', ')}; ${r.options.damageTasks} tasks each`],
    ['**unnoticed store damage** (leader went on, or a command recreated/trusted it)', r.failures['unnoticed store damage']],
    ['**surviving processes** (store damage)', r.failures['survivors (store damage)']],
    ['escape tasks (six escaped processes each)', `${r.escape.tasks} (${ENDINGS.length} endings × ${r.options.escapeRounds}); held by ${Object.entries(r.escape.heldBy).map(([k, n]) => `${k} ${n}`).join(', ') || 'n/a'}`],
    ...SHAPES.map((shape, i): [string, string] => [`survivors: ${shape}`, ENDINGS.map((e) => `${e} ${r.escape.survivors[e][i]}`).join(', ')]),
    ['**escaped survivors** (shapes × endings)', process.platform === 'linux' ? r.failures['escaped survivors'] : `${r.failures['escaped survivors']} (not measured: no /proc on ${process.platform})`],
    ...r.floods.cases.map((c): [string, string] => [
      `output flood: ${c.name} (${c.mb ? `${c.mb} MB, ` : ''}${c.lines.toLocaleString('en')} lines)`,
      `${c.rows} event rows (${c.outputRows} output; cap ${r.floods.maxEvents}), ${c.truncatedEvents} output_truncated, db ${(c.dbBytes / 1e6).toFixed(1)} MB, raw log ${(c.rawLogBytes / 1e6).toFixed(1)} MB, peak leader RSS ${c.peakRssMb} MB, ${c.seconds} s`,
    ]),
    ['**floods stored past their caps**', r.failures['floods stored past their caps']],
    ['**flooded tasks that did not end properly**', r.failures['flooded tasks that did not end properly']],
    ...guardRows(r),
  ];
  return ['| figure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}

function guardRows(r: ChaosReport): [string, string | number][] {
  const g = r.guards;
  if (!g) return [['guards', 'not run (--guards 0)']];
  const past = [...g.pastBudget].sort((a, b) => a - b);
  const events = (t: number) => `${t.toLocaleString('en')} (${(t / 1000).toFixed(0)} events)`;
  return [
    ['runaway tasks (1,000 tokens an event every 5 ms, budgets 5k–24k)', g.runaways],
    ['tokens stored past a budget: median / max (written before the stop, read from the pipe after it)', past.length ? `${events(percentile(past, 50) ?? 0)} / ${events(past.at(-1)!)}` : 'n/a'],
    ['usage lines written after a stop was decided: max', Math.max(0, ...g.afterStop)],
    ['**runaways not stopped at their budget** (still running, or > 1 line written after the stop)', r.failures['runaways not stopped at their budget']],
    ['**surviving processes** (runaways)', r.failures['survivors (runaways)']],
    ['rate-limited tasks (429 naming a 1 s reset)', `${g.limited}, put back in the queue ${g.rateLimitRequeues} times`],
    ['**tasks failed by rate limits**', r.failures['tasks failed by rate limits']],
    ['**retries spent on rate limits**', r.failures['retries spent on rate limits']],
    ['gateway rate limits (gateway a refuses its first runs, 429 naming a 2 s reset; b answers)', `${g.gatewayLimited} tasks, ${g.gatewayRequeues} 429s met on a; ${g.movedToFallback} moved to their fallback route on b, ${g.waitedForReset} without one completed on a after its reset`],
    ['**tasks failed by gateway rate limits**', r.failures['tasks failed by gateway rate limits']],
    ['**starts on a paused gateway**', r.failures['starts on a paused gateway']],
    ['flapping worker (crashes 4 s, then repaired; breaker 3 failures, 1 s doubling)', `${g.flaps} tasks: ${g.flapsFailed} failed while it crashed, ${g.flapsCompleted} completed; breaker opened ${g.breakerOpenings} times`],
    ['**starts while a breaker was open**', r.failures['starts while a breaker was open']],
    ['task trees (3 runaways, 2 at once, only a tree total of 10k–24k tokens)', g.trees],
    ['tokens stored past a tree total: max (one event of each running task is 2,000)', Math.max(0, ...g.treePastBudget).toLocaleString('en')],
    ['usage lines written after a tree stop was decided: max', Math.max(0, ...g.treeAfterStop)],
    ['**task trees not stopped at their total** (a running task not stopped, or > 1 line after the stop)', r.failures['task trees not stopped at their total']],
    ['**starts in a tree past its total**', r.failures['starts in a tree past its total']],
    ['tasks held for memory (fake meminfo: 300 MiB free, 512 MiB floor; then room)', `${g.memoryHeld} held, ${g.memoryCompleted} completed after`],
    ['**tasks started below the memory floor**', r.failures['tasks started below the memory floor']],
  ];
}

function manyClientsRow(m: ManyClientsFigures): string {
  return `${m.clients} servers, ${m.tasks} tasks; delegate_task p50/p95/max ${m.delegateMs.p50}/${m.delegateMs.p95}/${m.delegateMs.max} ms; oldest leader heartbeat seen ${m.maxBeatAgeMs} ms`;
}

function memoryRow(m: ManyClientsFigures): string {
  const f = m.floorMiB;
  return `${m.rssMiB.median} / ${m.rssMiB.pssMedian} MiB (peak RSS ${m.rssMiB.peakMedian}); floor: \`node -e\` ${f.node} / ${f.nodePss}, Node + MCP SDK on stdio ${f.sdk} / ${f.sdkPss}`;
}

/** Every scenario's notes, one bullet each. */
export function renderNotes(r: ChaosReport): string[] {
  const tag = (name: string, notes: string[]) => notes.map((n) => `- ${name}: ${n}`);
  return [
    ...tag('kills', r.kills.notes),
    ...tag('compete', r.compete.notes),
    ...tag('mcp', r.mcp.notes),
    ...tag('many clients', r.manyClients.notes),
    ...tag('http', r.http.notes),
    ...tag('secrets', r.secrets.notes),
    ...tag('accepts', r.accepts.notes),
    ...tag('custody', r.custody.notes),
    ...tag('damage', r.damage.notes),
    ...tag('escape', r.escape.notes),
    ...tag('floods', r.floods.notes),
    ...tag('guards', r.guards?.notes ?? []),
    ...Object.entries(r.secrets.byLabel).map(([label, n]) => `- secrets: ${label} leaked in ${n} places`),
  ];
}

/** The PostgreSQL fleet mode (`npm run chaos -- --store postgres`): its own scenario, report and table. */
export interface FleetChaosReport {
  options: Omit<FleetPgOptions, 'log'>;
  fleet: FleetPgFigures;
  failures: Record<string, number>;
  durationS: number;
}

export const FLEET_DEFAULTS: Omit<FleetPgOptions, 'log'> = { kills: 6, freezes: 3, cuts: 3, serverRestarts: 0, fullDisks: 1, diskMb: 256, seed: 1 };
/** `--full`: the sizes a fleet release is held to. */
export const FLEET_FULL: Omit<FleetPgOptions, 'log' | 'seed'> = { kills: 30, freezes: 10, cuts: 10, serverRestarts: 1, fullDisks: 3, diskMb: 512 };

export async function runFleetChaos(o: FleetPgOptions): Promise<FleetChaosReport> {
  const started = Date.now();
  const fleet = await runFleetPg(o);
  const failures = {
    'double runs (fleet)': fleet.doubleRuns,
    'overlapping attempts (fleet)': fleet.overlaps.length,
    'lost tasks (fleet)': fleet.lostTasks,
    'stuck tasks (fleet)': fleet.stuckTasks,
    'survivors (fleet)': fleet.survivors,
    'leaks (fleet)': fleet.leaks,
    'recovery timeouts (fleet)': fleet.recoveryTimeouts,
    'stuck tasks (full disk, fleet)': fleet.disk.stuck,
    'cancels that did not end a task (full disk)': fleet.disk.cancelsIgnored,
    'runners that exited (full disk)': fleet.disk.runnerExits,
    'server not back by itself (full disk)': fleet.disk.serverNotRecovered,
  };
  const { log: _log, ...options } = o;
  return { options, fleet, failures, durationS: Math.round((Date.now() - started) / 1000) };
}

export function renderFleetTable(r: FleetChaosReport): string {
  const f = r.fleet;
  const p = (q: number) => percentile(f.recoveryMs, q);
  const ms = (v: number | null) => (v === null ? 'n/a' : `${v} ms`);
  const rows: [string, string | number][] = [
    ['runners / store', '3 `lightworker run` processes (host-a/b/c), embedded PostgreSQL, each through its own TCP proxy'],
    ['faults', Object.entries(f.faults).map(([k, n]) => `${k} ${n}`).join(', ')],
    ...fullDiskRows(r),
    ['tasks / attempts (side log)', `${f.tasks} / ${f.attempts}`],
    ['**double runs** (an attempt run by two processes)', r.failures['double runs (fleet)']],
    ['**overlapping attempts** (side log)', r.failures['overlapping attempts (fleet)']],
    ['**lost tasks** (never completed)', r.failures['lost tasks (fleet)']],
    ['**stuck tasks** (active past timeout + lease)', r.failures['stuck tasks (fleet)']],
    ['**surviving processes**', process.platform === 'linux' ? r.failures['survivors (fleet)'] : `${r.failures['survivors (fleet)']} (not measured: no /proc on ${process.platform})`],
    ['**leaks** (store password × place: store cells, files, runner stderr, worker environments)', `${r.failures['leaks (fleet)']} (${f.workerEnvsSearched} worker environments searched)`],
    ['recovery (fault → orphan running again) p50 / p95', `${ms(p(50))} / ${ms(p(95))} (${f.recoveryMs.length} samples)`],
    ['**recovery timeouts** (> 60 s)', r.failures['recovery timeouts (fleet)']],
    ['orphans left at the automatic-resume limit (3), resumed by hand', f.leftAtLimit.length ? `${f.leftAtLimit.length} (${f.leftAtLimit.join(', ')})` : 0],
  ];
  return ['| figure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}

function fullDiskRows(r: FleetChaosReport): [string, string | number][] {
  const d = r.fleet.disk;
  if (!d.run) return [['full disk (server data folder on a tmpfs, filled)', r.options.fullDisks ? `not run: ${d.skipped}` : 'not run (--full-disks 0)']];
  const rec = [...d.serverRecoveryMs].sort((a, b) => a - b);
  return [
    [`full disk (server data folder on a ${d.sizeMb} MB tmpfs, filled to the last byte for 25 s)`, `${d.fills} times; running tasks when it filled ${d.heldAtFill.join(', ')}, of which ended while full ${d.endedWhileFull.join(', ')}`],
    ['**stuck tasks** (full disk: active with no live worker 30 s after space returned)', r.failures['stuck tasks (full disk, fleet)']],
    ['cancels (one while full, one after)', `${d.cancels}, ${d.cancelsRefused} refused while full (cancelled again after)`],
    ['**cancels that did not end an active task**', r.failures['cancels that did not end a task (full disk)']],
    ['**runners that exited** (full disk; started again, why in the notes)', r.failures['runners that exited (full disk)']],
    ['server: PANICs in its log / back (fresh connection answers) after space returned', `${d.serverPanics} / ${rec.length ? rec.map((m) => `${m} ms`).join(', ') : 'n/a'}`],
    ['**server not back by itself** within 60 s (then restarted by hand)', r.failures['server not back by itself (full disk)']],
  ];
}

/** True when every figure that must be zero is zero. */
export function passed(r: { failures: Record<string, number> }): boolean {
  return Object.values(r.failures).every((v) => v === 0);
}
