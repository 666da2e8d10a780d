import type { Command } from 'commander';
import { NO_LEADER, type FleetStatus, type StoreInfo } from '../commands/fleet.js';
import type { RunnerView } from '../store/runners.js';
import { withEngine } from './context.js';
import { out, printJson, table } from './output.js';
import { formatDuration } from './verification.js';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function storeLine(s: StoreInfo): string {
  const kind = s.kind === 'postgres' ? 'PostgreSQL' : 'SQLite';
  const from = s.source ? ` (from ${s.source})` : '';
  return `store: ${kind} ${s.label}${from}, schema ${s.schemaVersion}/${s.expectedSchemaVersion}`;
}

/** "in 8.2 s" for a live lease, "expired 3.0 s ago" for one that ran out. */
function leaseText(r: RunnerView): string {
  if (r.state === 'stopped') return 'released';
  return r.leaseExpiresInMs >= 0 ? `in ${formatDuration(r.leaseExpiresInMs)}` : `expired ${formatDuration(-r.leaseExpiresInMs)} ago`;
}

function runnerRow(r: RunnerView): string[] {
  const repos = Object.entries(r.repos).map(([key, path]) => `${key}=${path}`).join(', ') || '(none)';
  return [r.host, r.id, String(r.pid), r.expired ? 'lost (expired)' : r.state, `${r.running}/${r.slots}`, `${formatDuration(r.heartbeatAgeMs)} ago`, leaseText(r), repos];
}

/** The single host's leader, when no runner of a fleet is registered. */
function leaderLine(f: FleetStatus): string {
  const where = f.store.kind === 'sqlite' ? 'single host (SQLite)' : 'no runner registered';
  if (!f.leader) return `${where}: ${NO_LEADER}`;
  return `${where}: the leader is pid ${f.leader.pid} on ${f.leader.hostname ?? '?'} (heartbeat ${formatDuration(Math.max(0, f.now - f.leader.heartbeatAt))} ago)`;
}

/** `lightworker fleet` as a person reads it. */
export function fleetText(f: FleetStatus): string {
  const lines = [storeLine(f.store)];
  if (f.runners.length) {
    lines.push('', table(['HOST', 'RUNNER', 'PID', 'STATE', 'RUNNING', 'HEARTBEAT', 'LEASE', 'REPOSITORIES'], f.runners.map(runnerRow)), '');
    const r = f.summary.runners;
    lines.push(`runners: ${r.active} active, ${r.lost} lost, ${r.stopped} stopped`);
  } else lines.push(leaderLine(f));
  lines.push(`tasks: ${f.summary.tasks.running} running, ${f.summary.tasks.queued} queued`);
  for (const u of f.summary.unservedRepos) {
    lines.push(`${plural(u.queued, 'task')} wait${u.queued === 1 ? 's' : ''} for ${u.repoKey}: no live runner serves it`);
  }
  return lines.join('\n');
}

export function registerFleetCommand(program: Command): void {
  program
    .command('fleet')
    .description('the store, the runners of a fleet (hosts, repositories, leases, load) and queued work no runner serves')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const f = (await call('fleet_status', {})) as FleetStatus;
        if (o.json) printJson(f);
        else out(fleetText(f));
      });
    });
}
