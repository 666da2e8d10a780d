import { z } from 'zod';
import type { Engine } from '../engine.js';
import { currentLease } from '../store/leases.js';
import { storeCapabilities } from '../store/capabilities.js';
import { schemaVersion } from '../store/db.js';
import { storeTarget } from '../store/pg/open.js';
import { fleetSummary, listRunners, type FleetSummary, type RunnerView } from '../store/runners.js';
import { defineCommand } from './table.js';

/** Which store this home uses, never with a password: `label` is the SQLite file or the URL without it. */
export interface StoreInfo {
  kind: 'sqlite' | 'postgres';
  label: string;
  /** PostgreSQL: where the URL came from (LIGHTWORKER_DATABASE_URL, store.url_file or store.url). */
  source: string | null;
  schemaVersion: number;
  /** The schema version this binary writes for this kind of store. */
  expectedSchemaVersion: number;
}

/** The store the engine opened (reachable, or the engine would not exist) and its schema version. */
export function describeStore(engine: Engine): StoreInfo {
  const store = storeCapabilities(engine.db);
  let source: string | null = null;
  if (store.sharedByHosts) {
    try {
      source = storeTarget(engine.config)?.source ?? null;
    } catch {
      // the configuration changed since the engine opened its store: the source is no longer known
    }
  }
  return {
    kind: store.kind,
    label: engine.db.name,
    source,
    schemaVersion: schemaVersion(engine.db),
    expectedSchemaVersion: store.expectedSchemaVersion,
  };
}

/** What a home without a live leader is told (doctor, `lightworker fleet`). */
export const NO_LEADER = 'no process leads this home; tasks run once `lightworker run`, `serve`, the app or an MCP session starts one';

export interface FleetStatus {
  now: number;
  store: StoreInfo;
  /** This home's single leader (the SQLite scheduler lease), when one holds it now. */
  leader: { pid: number; hostname: string | null; heartbeatAt: number; expiresAt: number } | null;
  runners: RunnerView[];
  summary: Omit<FleetSummary, 'store'>;
}

/** Everything `lightworker fleet` shows: the store, each runner with its load and lease, the fleet's totals. */
export function fleetStatus(engine: Engine, now = Date.now()): FleetStatus {
  const runners = listRunners(engine.db, now);
  const { store: _store, ...summary } = fleetSummary(engine.db, now, runners);
  const lease = currentLease(engine.db);
  const leader = lease && lease.expiresAt > now ? { pid: lease.pid, hostname: lease.hostname, heartbeatAt: lease.heartbeatAt, expiresAt: lease.expiresAt } : null;
  return { now, store: describeStore(engine), leader, runners, summary };
}

export const fleetStatusCommand = defineCommand({
  name: 'fleet_status',
  description: 'The store, the runners of a fleet (hosts, repositories, leases, load) and queued work no runner serves.',
  input: z.strictObject({}),
  readOnly: true,
  handler: (ctx): FleetStatus => fleetStatus(ctx.engine),
});

export const FLEET_COMMANDS = [fleetStatusCommand];
