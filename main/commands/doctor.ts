import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { loadConfig } from '../core/config.js';
import { configProblems } from '../core/config-rules.js';
import { connect } from 'node:net';
import { gatewayKey, workerWaitReason } from '../scheduler/worker-pauses.js';
import { z } from 'zod';
import { isWritable } from '../core/home.js';
import { storeIdOf } from '../store/identity.js';
import { currentLease } from '../store/leases.js';
import { probeVersionLine } from '../workers/probe.js';
import { allWorkerNames, resolveAdapter } from '../workers/registry.js';
import { findOnPath } from '../workers/which.js';
import { defineCommand, type CommandContext } from './table.js';
import { installHint, listingAuth } from './workers.js';
import { describeStore, fleetStatus, NO_LEADER, type StoreInfo } from './fleet.js';
import { foreignSealOf, homeKeyId } from '../tasks/secrets.js';
import { queuedSealedTaskIds } from '../store/sealed.js';
import { quickCheck } from '../store/capabilities.js';
import { measureHome } from '../isolation/home-size.js';
import { formatPlannedRoute, plannedRoutes, routeFix } from '../tasks/route-table.js';

export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do about a failed check. */
  fix?: string;
  /** A failed optional check (a worker CLI you may not use) warns but does not fail the doctor. */
  optional?: boolean;
  /** The home size check: bytes by part (database, logs, worktrees, snapshots, artifacts, total). */
  sizes?: Record<string, number>;
}

/** git answers `--version` (probed like a worker CLI: cached, bounded, never in the caller's folder). */
async function gitCheck(): Promise<DoctorCheck> {
  const fix = 'install git and put it on PATH';
  const bin = findOnPath('git');
  if (!bin) return { name: 'git', ok: false, detail: 'git not found on PATH', fix };
  const probe = await probeVersionLine(bin, ['--version']);
  return probe.line ? { name: 'git', ok: true, detail: probe.line } : { name: 'git', ok: false, detail: `git not runnable: ${probe.unknown}`, fix };
}

function baseChecks(ctx: CommandContext): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  const major = Number(process.versions.node.split('.')[0]);
  checks.push({ name: 'node', ok: major >= 20, detail: `node ${process.versions.node}`, fix: major >= 20 ? undefined : 'use Node.js 20 or newer' });
  const home = ctx.engine.home.root;
  const writable = isWritable(home);
  checks.push({ name: 'home', ok: writable, detail: `${home} ${writable ? 'is writable' : 'is not writable'}`, fix: writable ? undefined : 'fix permissions or set LIGHTWORKER_HOME' });
  checks.push(storeCheck(ctx));
  try {
    const s = statfsSync(home);
    const free = s.bavail * s.bsize;
    const total = s.blocks * s.bsize;
    const reserve = Math.max(2 * 1024 ** 3, total * 0.05);
    const ok = free > reserve;
    checks.push({
      name: 'disk',
      ok,
      detail: `${(free / 1024 ** 3).toFixed(1)} GiB free of ${(total / 1024 ** 3).toFixed(1)} GiB (reserve ${(reserve / 1024 ** 3).toFixed(1)} GiB)`,
      fix: ok ? undefined : 'free disk space or run `lightworker prune --apply`',
    });
  } catch (err) {
    checks.push({ name: 'disk', ok: false, detail: (err as Error).message });
  }
  return checks;
}

const SOURCE_TEXT: Record<string, string> = {
  LIGHTWORKER_DATABASE_URL: 'from LIGHTWORKER_DATABASE_URL',
  'store.url_file': 'from the file store.url_file names',
  'store.url': 'from store.url in config.toml',
};

/**
 * The store: the SQLite file (integrity quick_check) or the PostgreSQL server (reachable: the engine
 * opened it), and its schema version. The PostgreSQL URL is shown without its password.
 */
function storeCheck(ctx: CommandContext): DoctorCheck {
  const fix = 'restore the database from a backup';
  try {
    const store = describeStore(ctx.engine);
    const quick = quickCheck(ctx.engine.db);
    const current = store.schemaVersion === store.expectedSchemaVersion;
    const ok = quick === 'ok' && current;
    const schema = `schema ${store.schemaVersion}/${store.expectedSchemaVersion}`;
    if (store.kind === 'sqlite') {
      const id = storeIdOf(ctx.engine.db);
      const detail = `SQLite ${store.label}: quick_check ${quick}, ${schema}${id ? `, store ${id}` : ''}`;
      return { name: 'database', ok, detail, fix: ok ? undefined : `${fix}; \`lightworker init --new-store\` sets the damaged file aside and starts an empty store` };
    }
    const from = store.source ? ` (${SOURCE_TEXT[store.source] ?? store.source})` : '';
    return { name: 'database', ok, detail: `PostgreSQL ${store.label}${from}: reachable, ${schema}`, fix: ok ? undefined : 'upgrade LightWorker on every host of the fleet to the same version' };
  } catch (err) {
    return { name: 'database', ok: false, detail: (err as Error).message, fix };
  }
}

/**
 * The fleet's runners (PostgreSQL, or any runner registered): how many are live or lost, and queued
 * work for repositories no live runner serves (a warning: it waits until such a runner starts).
 */
function fleetCheck(ctx: CommandContext, store: StoreInfo): DoctorCheck | null {
  const f = fleetStatus(ctx.engine);
  if (store.kind === 'sqlite' && f.runners.length === 0) return null;
  const r = f.summary.runners;
  const detail = `${r.active} runner${r.active === 1 ? '' : 's'} active, ${r.lost} lost; ${f.summary.tasks.running} tasks running, ${f.summary.tasks.queued} queued`;
  const unserved = f.summary.unservedRepos;
  if (!unserved.length) return { name: 'fleet', ok: true, detail };
  return {
    name: 'fleet',
    ok: false,
    optional: true,
    detail: `${detail}; ${unserved.map((u) => `${u.queued} queued for ${u.repoKey}`).join(', ')}: no live runner serves ${unserved.length === 1 ? 'it' : 'them'}`,
    fix: `start \`lightworker run\` on a host whose [fleet] repos names ${unserved.map((u) => u.repoKey).join(', ')}`,
  };
}

/**
 * A fleet's sealed tasks: each queued one this home's key cannot open (sealed with another host's
 * `[store] key_file`) is left by a runner here for one that holds that key, so say which keys those are.
 */
function sealCheck(ctx: CommandContext): DoctorCheck {
  const root = ctx.engine.home.root;
  const mine = homeKeyId(root);
  const foreign = new Map<string, number>();
  const ids = queuedSealedTaskIds(ctx.engine.db);
  for (const id of ids) {
    const key = foreignSealOf(ctx.engine.db, root, id);
    if (key) foreign.set(key, (foreign.get(key) ?? 0) + 1);
  }
  if (!foreign.size) return { name: 'sealed tasks', ok: true, detail: `this home's key ${mine} opens ${ids.length ? `all ${ids.length} queued sealed task${ids.length === 1 ? '' : 's'}` : 'every sealed task (none queued)'}` };
  const what = [...foreign].map(([key, n]) => `${n} queued task${n === 1 ? '' : 's'} sealed with key ${key}`).join(', ');
  return {
    name: 'sealed tasks',
    ok: false,
    optional: true,
    detail: `this runner cannot open tasks sealed with key ${[...foreign.keys()].join(', ')} (${what}; its key is ${mine}): a runner here leaves them for one that can`,
    fix: 'give every host of the fleet the same [store] key_file (32 bytes, mode 0600), then restart its runner',
  };
}

/**
 * config.toml as it is on disk now (a running console may still use the version before an edit): valid
 * TOML, keys and types the schema knows, every configured model allow-listed and each profile's worker
 * known — the same checks `update_settings` makes before it writes.
 */
function configCheck(ctx: CommandContext): DoctorCheck {
  const path = ctx.engine.home.config;
  const fix = `edit ${path} (or change it in Settings); \`lightworker init --force\` rewrites the documented defaults`;
  let config;
  let raw: unknown = {};
  try {
    config = loadConfig(path);
    if (existsSync(path)) raw = parseToml(readFileSync(path, 'utf8'));
  } catch (err) {
    return { name: 'config', ok: false, detail: (err as Error).message, fix };
  }
  const problems = configProblems(config, raw, allWorkerNames({ db: ctx.engine.db, home: ctx.engine.home, config }));
  if (problems.length) return { name: 'config', ok: false, detail: problems.map((p) => `${p.key}: ${p.message}`).join('; '), fix };
  return { name: 'config', ok: true, detail: existsSync(path) ? `${path} is valid` : `no ${path}: defaults in force` };
}

/** Who runs the scheduler for this home (informational: no leader is fine until there is work). */
function leaderCheck(ctx: CommandContext): DoctorCheck {
  const lease = currentLease(ctx.engine.db);
  const now = Date.now();
  if (!lease || lease.expiresAt <= now) {
    return { name: 'scheduler', ok: true, detail: NO_LEADER };
  }
  return { name: 'scheduler', ok: true, detail: `led by pid ${lease.pid} on ${lease.hostname ?? '?'} (heartbeat ${Math.max(0, Math.round((now - lease.heartbeatAt) / 100) / 10)} s ago)` };
}


/**
 * Every worker: installed and its version (detection never runs a model, nor a linked agent: see
 * workers/probe.ts). Missing CLIs only warn.
 */
async function workerChecks(ctx: CommandContext): Promise<DoctorCheck[]> {
  return Promise.all(
    allWorkerNames(ctx.engine).map(async (name): Promise<DoctorCheck> => {
      try {
        const info = await resolveAdapter(ctx.engine, name).detect();
        // Paused by its circuit breaker or a rate limit: said first, it is why its tasks wait.
        const paused = workerWaitReason(ctx.engine.db, ctx.engine.config, name);
        if (paused) return { name: `worker ${name}`, ok: false, optional: true, detail: paused, fix: 'it retries by itself at that time; fix the cause (logs of its last failed tasks: lightworker show ID)' };
        if (info.installed) {
          const auth = listingAuth(ctx, name, info);
          const detail = `${info.version ?? info.versionNote ?? 'installed'}${info.command ? ` (${info.command})` : ''}${info.acp ? `; ${info.acp}` : ''}; auth: ${auth.source}`;
          // A worker without credentials warns with the exact fix; a note (an ignored base URL) rides along.
          if (!auth.ok) return { name: `worker ${name}`, ok: false, optional: true, detail: `${detail}: not usable without credentials`, fix: auth.hint ?? undefined };
          return { name: `worker ${name}`, ok: true, detail: auth.hint ? `${detail} (note: ${auth.hint})` : detail };
        }
        return { name: `worker ${name}`, ok: false, optional: true, detail: info.reason ?? 'not installed', fix: installHint(name) };
      } catch (err) {
        return { name: `worker ${name}`, ok: false, optional: true, detail: (err as Error).message };
      }
    }),
  );
}

/** With gateways configured: the route each profile's, routed model's and other task will take (warned when its worker cannot speak the gateway's protocol). */
function routeChecks(ctx: CommandContext): DoctorCheck[] {
  if (!Object.keys(ctx.engine.config.gateways).length) return [];
  return plannedRoutes(ctx.engine.config).map((r) => ({
    name: `route ${r.subject}`,
    ok: r.problem === null,
    optional: true,
    detail: formatPlannedRoute(r).slice(r.subject.length + 2),
    fix: routeFix(r) ?? undefined,
  }));
}

/** Each configured gateway: its key variable is set, and its host accepts a TCP connection. */
async function gatewayChecks(ctx: CommandContext): Promise<DoctorCheck[]> {
  return Promise.all(
    Object.entries(ctx.engine.config.gateways).map(async ([name, g]): Promise<DoctorCheck> => {
      // Paused by its circuit breaker (faults met through it, by any worker): why the tasks routed to it wait.
      const paused = workerWaitReason(ctx.engine.db, ctx.engine.config, gatewayKey(name));
      if (paused) return { name: `gateway ${name}`, ok: false, optional: true, detail: paused, fix: 'it retries by itself at that time (one probe task); fix the gateway (logs of its last failed tasks: lightworker show ID)' };
      const url = new URL(g.base_url);
      const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
      const reachable = await canConnect(url.hostname.replace(/^\[|\]$/g, ''), port, 1500);
      const keySet = Boolean(process.env[g.key_env]);
      const ok = reachable && keySet;
      const problems = [reachable ? null : `${url.host} does not accept connections`, keySet ? null : `${g.key_env} is not set`].filter(Boolean);
      return {
        name: `gateway ${name}`,
        ok,
        detail: ok ? `${g.base_url} reachable; key in ${g.key_env}` : problems.join('; '),
        fix: ok ? undefined : `start the gateway at ${g.base_url} and export ${g.key_env} where LightWorker runs`,
      };
    }),
  );
}

function canConnect(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function mib(m: { bytes: number; complete: boolean }): string {
  return `${m.complete ? '' : '≥ '}${(m.bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The home's size by part: where the bytes are, and the command that frees them. */
function sizeCheck(ctx: CommandContext): DoctorCheck {
  const s = measureHome(ctx.engine);
  const parts = (['database', 'logs', 'worktrees', 'snapshots', 'artifacts'] as const).map((k) => `${k} ${mib(s[k])}`).join(', ');
  const retention = ctx.engine.config.retention;
  const gc = retention.enabled ? `[retention] deletes trees ended over ${retention.older_than} ago` : '`lightworker gc --older-than 30d` shows what old task trees hold ([retention] is off)';
  return { name: 'home size', ok: true, detail: `${(s.total / 1024 / 1024).toFixed(1)} MiB: ${parts}; ${gc}`, sizes: Object.fromEntries(Object.entries(s).map(([k, v]) => [k, typeof v === 'number' ? v : v.bytes])) };
}

export const runDoctor = defineCommand({
  name: 'run_doctor',
  description: 'Check git, node, home, store, disk, workers, leader.',
  input: z.strictObject({}),
  readOnly: true,
  async handler(ctx) {
    const checks = baseChecks(ctx);
    checks.push(configCheck(ctx));
    checks.push(leaderCheck(ctx));
    checks.push(sizeCheck(ctx));
    let store: StoreInfo | null = null;
    try {
      store = describeStore(ctx.engine);
      const fleet = fleetCheck(ctx, store);
      if (fleet) checks.push(fleet);
      if (store.kind === 'postgres') checks.push(sealCheck(ctx));
    } catch (err) {
      checks.push({ name: 'fleet', ok: false, detail: (err as Error).message });
    }
    const [git, workers, gateways] = await Promise.all([gitCheck(), workerChecks(ctx), gatewayChecks(ctx)]);
    checks.unshift(git);
    checks.push(...workers, ...gateways, ...routeChecks(ctx));
    return { ok: checks.every((c) => c.ok || c.optional), checks, store };
  },
});
