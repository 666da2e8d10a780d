import { isPostgres, prep, type Db } from './db.js';

/** A runner as `lightworker fleet` shows it. `lost` also covers an active row whose lease ran out. */
export interface RunnerView {
  id: string;
  host: string;
  pid: number;
  /** 'active', 'stopped' or 'lost' (the stored state, or 'lost' when an active lease expired). */
  state: 'active' | 'stopped' | 'lost';
  /** True when the row still says active but its lease expired (no runner has marked it lost yet). */
  expired: boolean;
  /** Repository identity → this runner's local path. */
  repos: Record<string, string>;
  slots: number;
  /** Its tasks in starting, running or verifying. */
  running: number;
  /** Until its lease runs out (negative: ran out that long ago). */
  leaseExpiresInMs: number;
  heartbeatAgeMs: number;
  startedAt: number;
  endedAt: number | null;
}

interface RunnerRow {
  id: string;
  host: string;
  pid: number;
  repos: string;
  slots: number;
  state: 'active' | 'stopped' | 'lost';
  started_at: number;
  heartbeat_at: number;
  expires_at: number;
  ended_at: number | null;
  running: number | null;
}

/** A runner's repos column: a JSON object; anything else (a hand-edited row) reads as none. */
function parseRepos(text: string): Record<string, string> {
  try {
    const v = JSON.parse(text) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
    return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/**
 * Every runner of the fleet with its load (tasks it claimed that are starting, running or verifying),
 * live ones first, then by host. `now` decides which leases have expired.
 */
export function listRunners(db: Db, now: number): RunnerView[] {
  const rows = prep(
    db,
    `SELECT r.id, r.host, r.pid, r.repos, r.slots, r.state, r.started_at, r.heartbeat_at, r.expires_at, r.ended_at, t.running
     FROM runners r
     LEFT JOIN (SELECT runner_id, COUNT(*) AS running FROM tasks WHERE status IN ('starting', 'running', 'verifying') GROUP BY runner_id) t ON t.runner_id = r.id
     ORDER BY r.host, r.started_at, r.id`,
  ).all() as RunnerRow[];
  const views = rows.map((r): RunnerView => {
    const expired = r.state === 'active' && r.expires_at < now;
    return {
      id: r.id,
      host: r.host,
      pid: r.pid,
      state: expired ? 'lost' : r.state,
      expired,
      repos: parseRepos(r.repos),
      slots: r.slots,
      running: r.running ?? 0,
      leaseExpiresInMs: r.expires_at - now,
      heartbeatAgeMs: Math.max(0, now - r.heartbeat_at),
      startedAt: r.started_at,
      endedAt: r.ended_at,
    };
  });
  const rank = { active: 0, lost: 1, stopped: 2 };
  return views.sort((a, b) => rank[a.state] - rank[b.state]);
}

export interface FleetSummary {
  store: { kind: 'sqlite' | 'postgres'; label: string };
  runners: { active: number; lost: number; stopped: number };
  tasks: { running: number; queued: number };
  /** Queued tasks per repository identity (tasks without one are counted in `tasks.queued` only). */
  queuedByRepo: { repoKey: string; queued: number; served: boolean }[];
  /**
   * Repositories with queued tasks that no live runner serves: those tasks wait until one does. Only in a
   * fleet (PostgreSQL, or any runner registered): a single SQLite host's leader serves every repository.
   */
  unservedRepos: { repoKey: string; queued: number }[];
}

/**
 * The fleet at a glance: the store, how many runners are live or lost, the fleet-wide load, and which
 * repositories have queued work that no live runner serves. `label` is the store's name without any
 * password (the SQLite file path, or the PostgreSQL URL as store/pg/open.ts `storeTarget` prints it).
 */
export function fleetSummary(db: Db, now: number, runners: RunnerView[] = listRunners(db, now)): FleetSummary {
  const count = (s: RunnerView['state']) => runners.filter((r) => r.state === s).length;
  const live = runners.filter((r) => r.state === 'active');
  const served = new Set(live.flatMap((r) => Object.keys(r.repos)));
  const hosts = new Set(live.map((r) => r.host));
  const totals = prep(
    db,
    `SELECT SUM(CASE WHEN status IN ('starting', 'running', 'verifying') THEN 1 ELSE 0 END) AS running,
            SUM(CASE WHEN status = 'queued' THEN 1 ELSE 0 END) AS queued
     FROM tasks WHERE status IN ('starting', 'running', 'verifying', 'queued')`,
  ).get() as { running: number | null; queued: number | null };
  // A fleet task can run on a runner of the host it was submitted on, or on one serving its repository.
  const byRepo = prep(
    db,
    `SELECT repo_key, origin_host, COUNT(*) AS n FROM tasks WHERE status = 'queued' AND (repo_key IS NOT NULL OR origin_host IS NOT NULL)
      GROUP BY repo_key, origin_host ORDER BY repo_key, origin_host`,
  ).all() as { repo_key: string | null; origin_host: string | null; n: number }[];
  const fleet = isPostgres(db) || runners.length > 0;
  const queuedByRepo = byRepo.map((r) => ({
    repoKey: r.repo_key ?? `a folder without a remote on ${r.origin_host}`,
    queued: r.n,
    served: !fleet || (r.origin_host !== null && hosts.has(r.origin_host)) || (r.repo_key !== null && served.has(r.repo_key)),
  }));
  return {
    store: { kind: isPostgres(db) ? 'postgres' : 'sqlite', label: db.name },
    runners: { active: count('active'), lost: count('lost'), stopped: count('stopped') },
    tasks: { running: totals.running ?? 0, queued: totals.queued ?? 0 },
    queuedByRepo,
    unservedRepos: queuedByRepo.filter((r) => !r.served).map(({ repoKey, queued }) => ({ repoKey, queued })),
  };
}
