import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fleetText } from '../../main/cli/fleet.js';
import type { FleetStatus } from '../../main/commands/fleet.js';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { fleetSummary, listRunners } from '../../main/store/runners.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * `lightworker fleet` and doctor's store and fleet checks, on both stores (vitest.config.ts lists this
 * file in the postgres project too). Runner rows are written here directly, as a fleet runner writes them.
 */
const POSTGRES = process.env.LIGHTWORKER_TEST_STORE === 'postgres';
const API = 'github.com/acme/api';
const WEB = 'github.com/acme/web';

let h: TestHome;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  h.cleanup();
});

interface RunnerFixture {
  id: string;
  host: string;
  repos: Record<string, string>;
  state?: 'active' | 'stopped' | 'lost';
  slots?: number;
  heartbeatAgo: number;
  expiresIn: number;
}

function insertRunner(r: RunnerFixture, now: number): void {
  h.engine.write(() =>
    h.engine.db
      .prepare('INSERT INTO runners (id, host, pid, pid_start, repos, slots, state, started_at, heartbeat_at, expires_at, ended_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)')
      .run(r.id, r.host, 4242, JSON.stringify(r.repos), r.slots ?? 4, r.state ?? 'active', now - 60_000, now - r.heartbeatAgo, now + r.expiresIn, r.state === 'stopped' ? now - 1000 : null),
  );
}

/** A queued task for `repoKey`; with `runner`, claimed by it and running (as the runner's claim leaves it). */
async function taskFor(repoKey: string, runner?: string): Promise<string> {
  const id = (await h.call('delegate_task', { objective: `work on ${repoKey}`, workspace: h.repo, kind: 'explore' })).task.id as string;
  h.engine.write(() => {
    h.engine.db.prepare('UPDATE tasks SET repo_key = ? WHERE id = ?').run(repoKey, id);
    if (runner) h.engine.db.prepare("UPDATE tasks SET status = 'running', runner_id = ?, started_at = ? WHERE id = ?").run(runner, Date.now(), id);
  });
  return id;
}

/** Three runners: one live on host-a (api), one whose lease ran out on host-b (web), one stopped. */
async function seedFleet(now: number): Promise<void> {
  insertRunner({ id: 'run-a', host: 'host-a', repos: { [API]: '/srv/api' }, heartbeatAgo: 1500, expiresIn: 60_000 }, now);
  insertRunner({ id: 'run-b', host: 'host-b', repos: { [WEB]: '/srv/web', [API]: '/data/api' }, heartbeatAgo: 30_000, expiresIn: -20_000 }, now);
  insertRunner({ id: 'run-c', host: 'host-c', repos: { [WEB]: '/srv/web' }, state: 'stopped', heartbeatAgo: 90_000, expiresIn: -80_000 }, now);
  await taskFor(API, 'run-a');
  await taskFor(API, 'run-a');
  await taskFor(WEB, 'run-b');
  await taskFor(API);
  for (let i = 0; i < 3; i++) await taskFor(WEB);
}

describe('the fleet read side (store/runners.ts)', () => {
  it('lists each runner with its load and lease; an active row whose lease ran out reads as lost (expired)', async () => {
    const now = Date.now();
    await seedFleet(now);
    const runners = listRunners(h.engine.db, now);
    expect(runners.map((r) => [r.id, r.state, r.expired, r.running])).toEqual([
      ['run-a', 'active', false, 2],
      ['run-b', 'lost', true, 1],
      ['run-c', 'stopped', false, 0],
    ]);
    const [a, b] = runners;
    expect(a).toMatchObject({ host: 'host-a', pid: 4242, slots: 4, repos: { [API]: '/srv/api' }, leaseExpiresInMs: 60_000, heartbeatAgeMs: 1500, startedAt: now - 60_000 });
    expect(b).toMatchObject({ repos: { [WEB]: '/srv/web', [API]: '/data/api' }, leaseExpiresInMs: -20_000 });
    // The same rows a moment earlier: run-b's lease had not run out yet.
    expect(listRunners(h.engine.db, now - 25_000).find((r) => r.id === 'run-b')).toMatchObject({ state: 'active', expired: false });
  });

  it('sums the fleet and names the repositories whose queued tasks no live runner serves', async () => {
    const now = Date.now();
    await seedFleet(now);
    const s = fleetSummary(h.engine.db, now);
    expect(s.store.kind).toBe(POSTGRES ? 'postgres' : 'sqlite');
    expect(s.runners).toEqual({ active: 1, lost: 1, stopped: 1 });
    expect(s.tasks).toEqual({ running: 3, queued: 4 });
    expect(s.queuedByRepo).toEqual([
      { repoKey: API, queued: 1, served: true },
      { repoKey: WEB, queued: 3, served: false },
    ]);
    expect(s.unservedRepos).toEqual([{ repoKey: WEB, queued: 3 }]);
    // A live runner for web appears: nothing waits without a runner any more.
    insertRunner({ id: 'run-d', host: 'host-d', repos: { [WEB]: '/srv/web' }, heartbeatAgo: 0, expiresIn: 10_000 }, now);
    expect(fleetSummary(h.engine.db, now).unservedRepos).toEqual([]);
  });
});

describe('lightworker fleet', () => {
  it('prints the store, a row per runner, the totals and the unserved repository; --json has the same', async () => {
    await seedFleet(Date.now());
    const r = await runCli(['fleet'], { home: h.home });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(POSTGRES ? /^store: PostgreSQL postgres:\/\/lightworker@127\.0\.0\.1:\d+\/postgres \(schema t_[0-9a-f]+\) \(from store\.url\), schema \d+\/\d+$/m : /^store: SQLite .*lightworker\.db, schema \d+\/\d+$/m);
    expect(r.stdout).toMatch(/^HOST\s+RUNNER\s+PID\s+STATE\s+RUNNING\s+HEARTBEAT\s+LEASE\s+REPOSITORIES$/m);
    expect(r.stdout).toMatch(/^host-a\s+run-a\s+4242\s+active\s+2\/4\s+\d+\.\d s ago\s+in \d+\.\d s\s+github\.com\/acme\/api=\/srv\/api$/m);
    expect(r.stdout).toMatch(/^host-b\s+run-b\s+4242\s+lost \(expired\)\s+1\/4\s+\d+\.\d s ago\s+expired \d+\.\d s ago\s+github\.com\/acme\/web=\/srv\/web, github\.com\/acme\/api=\/data\/api$/m);
    expect(r.stdout).toMatch(/^host-c\s+run-c\s+4242\s+stopped\s+0\/4\s+.*released/m);
    expect(r.stdout).toMatch(/^runners: 1 active, 1 lost, 1 stopped$/m);
    expect(r.stdout).toMatch(/^tasks: 3 running, 4 queued$/m);
    expect(r.stdout).toMatch(/^3 tasks wait for github\.com\/acme\/web: no live runner serves it$/m);
    expect(r.stdout).not.toMatch(/wait for github\.com\/acme\/api/);

    const j = await runCli(['fleet', '--json'], { home: h.home });
    const f = JSON.parse(j.stdout) as FleetStatus;
    expect(f.store).toMatchObject({ kind: POSTGRES ? 'postgres' : 'sqlite', source: POSTGRES ? 'store.url' : null });
    expect(f.store.schemaVersion).toBe(f.store.expectedSchemaVersion);
    expect(f.runners.map((x) => x.id)).toEqual(['run-a', 'run-b', 'run-c']);
    expect(f.summary.unservedRepos).toEqual([{ repoKey: WEB, queued: 3 }]);
  });

  it('with no runner registered names the single leader (or says none leads)', async () => {
    const where = POSTGRES ? 'no runner registered' : 'single host \\(SQLite\\)';
    let f = (await h.call('fleet_status')) as FleetStatus;
    expect(f.runners).toEqual([]);
    expect(fleetText(f)).toMatch(new RegExp(`^${where}: no process leads this home`, 'm'));
    svc = await startSchedulerService(h.engine);
    f = (await h.call('fleet_status')) as FleetStatus;
    if (POSTGRES) {
      // On PostgreSQL a scheduler is a fleet runner: it registers itself, no single leader.
      expect(f.runners).toMatchObject([{ pid: process.pid, state: 'active' }]);
      return;
    }
    expect(f.leader).toMatchObject({ pid: process.pid });
    expect(fleetText(f)).toMatch(new RegExp(`^${where}: the leader is pid ${process.pid} on \\S+ \\(heartbeat (\\d+ ms|\\d+\\.\\d s) ago\\)$`, 'm'));
    expect(fleetText(f)).toMatch(/^tasks: 0 running, 0 queued$/m);
  });
});

describe('doctor: the store and the fleet', () => {
  const check = (r: { checks: { name: string }[] }, name: string) => r.checks.find((c) => c.name === name) as { ok: boolean; optional?: boolean; detail: string; fix?: string } | undefined;

  it('names the store and its schema; a fleet check counts runners and warns about unserved work', async () => {
    let r = await h.call('run_doctor');
    const db = check(r, 'database')!;
    expect(db.ok).toBe(true);
    expect(db.detail).toMatch(POSTGRES ? /^PostgreSQL postgres:\/\/lightworker@127\.0\.0\.1:\d+\/postgres \(schema t_[0-9a-f]+\) \(from store\.url in config\.toml\): reachable, schema (\d+)\/\1$/ : /^SQLite .*lightworker\.db: quick_check ok, schema (\d+)\/\1, store [0-9A-Z]{26}$/);
    expect(r.store).toMatchObject({ kind: POSTGRES ? 'postgres' : 'sqlite' });
    // A single SQLite host has no fleet to report; PostgreSQL always has one (maybe of no runners yet).
    if (POSTGRES) expect(check(r, 'fleet')).toMatchObject({ ok: true, detail: '0 runners active, 0 lost; 0 tasks running, 0 queued' });
    else expect(check(r, 'fleet')).toBeUndefined();

    await seedFleet(Date.now());
    r = await h.call('run_doctor');
    expect(check(r, 'fleet')).toMatchObject({
      ok: false,
      optional: true,
      detail: '1 runner active, 1 lost; 3 tasks running, 4 queued; 3 queued for github.com/acme/web: no live runner serves it',
      fix: expect.stringMatching(/lightworker run.*github\.com\/acme\/web/),
    });
  });
});

describe('credentials: a password in LIGHTWORKER_DATABASE_URL is never printed', () => {
  const PASSWORD = 'PwLeakCheck9931';

  // A PostgreSQL-only case: registered in the postgres project (vitest.config.ts), absent (not skipped) in sqlite.
  const itOnPostgres = (POSTGRES ? it : () => undefined) as typeof it;
  itOnPostgres('doctor --json, fleet and fleet --json name the store without it', async () => {
    await seedFleet(Date.now());
    const url = new URL(process.env.LIGHTWORKER_TEST_PG_URL!);
    url.password = PASSWORD; // the test server trusts 127.0.0.1: any password connects
    const env = { LIGHTWORKER_DATABASE_URL: url.toString() };
    const doctor = await runCli(['doctor', '--json'], { home: h.home, env });
    const fleet = await runCli(['fleet'], { home: h.home, env });
    const fleetJson = await runCli(['fleet', '--json'], { home: h.home, env });
    for (const r of [doctor, fleet, fleetJson]) {
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      expect(r.stdout).toContain(`postgres://lightworker@127.0.0.1:${url.port}/postgres`);
    }
    expect(JSON.parse(doctor.stdout).checks.find((c: { name: string }) => c.name === 'database').detail).toMatch(/\(from LIGHTWORKER_DATABASE_URL\): reachable/);
    expect(JSON.parse(fleetJson.stdout).store).toMatchObject({ kind: 'postgres', source: 'LIGHTWORKER_DATABASE_URL' });
    expect(fleet.stdout).toMatch(/^3 tasks wait for github\.com\/acme\/web/m);
  });

  it('an unreachable server: fleet fails naming the store without the password; doctor reports it as its failed check', async () => {
    const env = { LIGHTWORKER_DATABASE_URL: `postgres://lw:${PASSWORD}@127.0.0.1:1/lw` };
    for (const args of [['fleet', '--json'], ['fleet']]) {
      const r = await runCli(args, { home: h.home, env });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: cannot reach the PostgreSQL store postgres:\/\/lw@127\.0\.0\.1:1\/lw/);
      expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    }
    const doctor = await runCli(['doctor', '--json'], { home: h.home, env });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout + doctor.stderr).not.toContain(PASSWORD);
    expect(JSON.parse(doctor.stdout)).toEqual({
      ok: false,
      checks: [{ name: 'database', ok: false, detail: expect.stringMatching(/^cannot reach the PostgreSQL store postgres:\/\/lw@127\.0\.0\.1:1\/lw .*ECONNREFUSED/), fix: expect.stringMatching(/PostgreSQL server/) }],
    });
    const human = await runCli(['doctor'], { home: h.home, env });
    expect(human.stdout).toMatch(/^FAIL {2}database +cannot reach the PostgreSQL store/m);
  });

  it('a password written into [store] url is refused by doctor naming store.url, and not quoted back', async () => {
    writeFileSync(h.engine.home.config, `[store]\nurl = "postgres://lw:${PASSWORD}@127.0.0.1:1/lw"\n`);
    const r = await runCli(['doctor', '--json'], { home: h.home, env: { LIGHTWORKER_DATABASE_URL: '' } });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    expect(JSON.parse(r.stdout).checks).toEqual([expect.objectContaining({ name: 'config', ok: false, detail: expect.stringMatching(/store\.url: must not contain a password/) })]);
  });
});
