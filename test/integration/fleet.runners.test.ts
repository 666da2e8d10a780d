import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { storeConfigFor } from '../helpers/postgres.js';

/**
 * A fleet on one PostgreSQL: three runners, each a separate home standing in for a host
 * (its own `[fleet] host_id` and its own clones of the repositories), and a fourth home, the
 * developer's laptop, that only submits. Runners a and b serve `api`; runner c serves `web`; nobody
 * serves `docs`.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let store: string;
let log: string;
const homes: Record<string, string> = {};
const clones: Record<string, Record<string, string>> = {};
const runners: Record<string, ChildProcess> = {};
const stderrOf: Record<string, () => string> = {};
let laptop: Engine;

function clone(origin: string, dest: string): string {
  mkdirSync(join(dest, '..'), { recursive: true });
  execFileSync('git', ['clone', '-q', origin, dest]);
  execFileSync('git', ['config', 'user.email', 'test@example.com'], { cwd: dest });
  execFileSync('git', ['config', 'user.name', 'Test'], { cwd: dest });
  return dest;
}

function makeHost(name: string, repos: string[], origins: Record<string, string>): void {
  const home = join(t.dir, name, 'home');
  mkdirSync(home, { recursive: true });
  clones[name] = Object.fromEntries(repos.map((r) => [r, clone(origins[r], join(t.dir, name, 'src', r))]));
  const repoLines = Object.entries(clones[name]).map(([r, p]) => `"${r}" = "${p}"`).join(', ');
  writeFileSync(
    join(home, 'config.toml'),
    `${store}[fleet]\nhost_id = "${name}"\nrepos = { ${repoLines} }\nlease_ttl_ms = 4000\n` +
      // per_repository 6 < the 8 slots of a and b together: the limit must hold across hosts.
      `[scheduler]\nmax_concurrency = 4\nper_root = 64\nper_repository = 6\nkill_grace_ms = 500\nauto_resume_orphans = false\n`,
  );
  homes[name] = home;
}

function startRunner(name: string): void {
  const child = startCli(['run'], { home: homes[name] });
  runners[name] = child;
  stderrOf[name] = captureStderr(child);
}

async function call(name: string, input: unknown): Promise<any> {
  return runCommand(COMMANDS, { engine: laptop, face: 'cli', depth: 0 }, name, input);
}

async function submit(repo: string, n: number, mock: Record<string, unknown>, chain = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 100) {
    const size = Math.min(100, n - start);
    const tasks = Array.from({ length: size }, (_, i) => ({
      ref: `t${i}`,
      objective: `${repo} task ${start + i}`,
      workspace: clones.laptop[repo],
      metadata: { mock: { append_log: log, ...mock } },
      // Dependencies: every `chain`-th task waits for the one before it (in the same batch).
      ...(chain && i % chain !== 0 ? { depends_on: [`t${i - 1}`] } : {}),
    }));
    const r = await call('delegate_batch', { tasks });
    ids.push(...r.tasks.map((x: { id: string }) => x.id));
  }
  return ids;
}

function statuses(ids: string[]): Record<string, string> {
  const rows = laptop.db.prepare(`SELECT id, status FROM tasks WHERE id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as { id: string; status: string }[];
  return Object.fromEntries(rows.map((r) => [r.id, r.status]));
}

function logLines(): { task: string; attempt: string; pid: number }[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => {
    const [task, attempt, pid] = l.split(' ');
    return { task, attempt, pid: Number(pid) };
  });
}

/** PIDs of the escaped descendants the mock workers reported (worker.tool `escape` events). */
function escapedPids(ids: string[]): number[] {
  const rows = laptop.db.prepare(`SELECT payload FROM events WHERE type = 'worker.tool' AND task_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as { payload: string }[];
  return rows.map((r) => JSON.parse(r.payload) as { name: string; output: string }).filter((p) => p.name === 'escape').map((p) => Number(p.output));
}

/** The most of `ids` ever active at once (starting, running, verifying), replayed from the event log. */
function peakActive(ids: string[]): number {
  const ACTIVE = new Set(['starting', 'running', 'verifying']);
  const rows = laptop.db.prepare(`SELECT payload FROM events WHERE type = 'task.status' AND task_id IN (SELECT value FROM json_each(?)) ORDER BY seq`).all(JSON.stringify(ids)) as { payload: string }[];
  let now = 0;
  let peak = 0;
  for (const r of rows) {
    const { from, to } = JSON.parse(r.payload) as { from: string; to: string };
    now += (ACTIVE.has(to) ? 1 : 0) - (ACTIVE.has(from) ? 1 : 0);
    peak = Math.max(peak, now);
  }
  return peak;
}

/**
 * What the fleet looks like now, for a timeout's message: task counts, the runners' rows and processes
 * (exit, stderr tail), and every PostgreSQL session of LightWorker that is not idle (what it waits on).
 */
function fleetState(ids: string[]): string {
  const counts: Record<string, number> = {};
  for (const s of Object.values(statuses(ids))) counts[s] = (counts[s] ?? 0) + 1;
  const now = Date.now();
  const rows = laptop.db.prepare(`SELECT host, state, pid, expires_at FROM runners ORDER BY started_at`).all() as { host: string; state: string; pid: number; expires_at: number }[];
  let sessions = '';
  try {
    const act = laptop.db
      .prepare(`SELECT pid, state, wait_event_type AS wt, wait_event AS we, left(query, 100) AS q FROM pg_stat_activity WHERE application_name LIKE 'lightworker/%' AND state <> 'idle' AND pid <> pg_backend_pid()`)
      .all() as { pid: number; state: string; wt: string | null; we: string | null; q: string }[];
    sessions = act.map((a) => `${a.pid} ${a.state} ${a.wt ?? ''}/${a.we ?? ''} ${a.q}`).join('; ');
  } catch (err) {
    sessions = `(pg_stat_activity: ${(err as Error).message})`;
  }
  const procs = Object.entries(runners).map(([n, c]) => `${n} pid ${c.pid} exit ${c.exitCode ?? c.signalCode ?? 'running'}: ${stderrOf[n]().slice(-400)}`);
  return [
    `statuses ${JSON.stringify(counts)}`,
    `runners ${rows.map((r) => `${r.host}/${r.pid}/${r.state}/expires ${r.expires_at - now} ms`).join(', ')}`,
    `processes ${procs.join(' | ')}`,
    `busy sessions ${sessions || 'none'}`,
  ].join('\n');
}

/** Where each task was placed: the runner's host and the workspace it mapped to. */
function placements(ids: string[]): Map<string, { host: string; workspace: string; runner: string }[]> {
  const rows = laptop.db.prepare(`SELECT task_id, payload FROM events WHERE type = 'fleet.placed' AND task_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as {
    task_id: string;
    payload: string;
  }[];
  const out = new Map<string, { host: string; workspace: string; runner: string }[]>();
  for (const r of rows) {
    const p = JSON.parse(r.payload) as { host: string; workspace: string; runner: string };
    out.set(r.task_id, [...(out.get(r.task_id) ?? []), p]);
  }
  return out;
}

beforeAll(() => {
  t = tempDir('lw-fleet-');
  store = storeConfigFor(url);
  log = join(t.dir, 'runs.log');
  const origins = { api: makeRepo(join(t.dir, 'origin', 'api')), web: makeRepo(join(t.dir, 'origin', 'web')), docs: makeRepo(join(t.dir, 'origin', 'docs')) };
  makeHost('laptop', ['api', 'web', 'docs'], origins);
  makeHost('host-a', ['api'], origins);
  makeHost('host-b', ['api'], origins);
  makeHost('host-c', ['web'], origins);
  laptop = new Engine({ home: homes.laptop });
});

afterAll(async () => {
  for (const c of Object.values(runners)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(Object.values(runners).map((c) => exited(c)));
  // Workers a killed runner left behind (the test kills its runner with SIGKILL on purpose).
  for (const l of logLines()) if (isAlive(l.pid)) process.kill(l.pid, 'SIGKILL');
  const all = (laptop.db.prepare('SELECT id FROM tasks').all() as { id: string }[]).map((r) => r.id);
  for (const pid of escapedPids(all)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  laptop?.close();
  t?.cleanup();
});

describe('a fleet of runners on one PostgreSQL', () => {
  it('500 tasks with dependencies: each runs exactly once, on a runner that has its repository; a repository nobody serves waits with the reason', async () => {
    const api = await submit('api', 400, {}, 5);
    const web = await submit('web', 100, {}, 4);
    const [docs] = await submit('docs', 1, {});
    for (const name of ['host-a', 'host-b', 'host-c']) startRunner(name);
    const all = [...api, ...web];
    await until(() => Object.values(statuses(all)).every((s) => s === 'completed'), 240_000, () => `500 tasks to complete\n${fleetState(all)}`, 250);

    // Exactly once: one worker run per task, one placement per task.
    const lines = logLines();
    expect(lines.length).toBe(all.length);
    expect(new Set(lines.map((l) => l.task)).size).toBe(all.length);
    const placed = placements(all);
    for (const id of all) expect(placed.get(id), id).toHaveLength(1);
    // Each on a runner that has its repository, in that runner's own clone.
    const hostsOf = (ids: string[]) => new Set(ids.map((id) => placed.get(id)![0].host));
    for (const id of api) {
      const p = placed.get(id)![0];
      expect(['host-a', 'host-b']).toContain(p.host);
      expect(p.workspace).toBe(clones[p.host].api);
    }
    for (const id of web) expect(placed.get(id)![0]).toMatchObject({ host: 'host-c', workspace: clones['host-c'].web });
    expect(hostsOf(api)).toEqual(new Set(['host-a', 'host-b']));
    // The per-repository limit held across the fleet: never more than 6 api tasks active at once.
    expect(peakActive(api)).toBeGreaterThan(4); // both runners worked on api at the same time
    expect(peakActive(api)).toBeLessThanOrEqual(6);

    // Its worktree is on the host that ran it: the laptop is told where to look.
    const host = placed.get(api[0])![0].host;
    await expect(call('get_task_diff', { id: api[0] })).rejects.toThrow(new RegExp(`ran on host ${host}, where its worktree is; run \`lightworker diff`));

    // Nobody serves docs: it waits, and says why.
    expect(statuses([docs])[docs]).toBe('queued');
    const shown = await call('get_task', { id: docs });
    expect(shown.task.waitingFor).toMatch(/no live runner serves repository docs/);
    const cli = await runCli(['show', docs], { home: homes.laptop });
    expect(cli.stdout).toMatch(/waiting: +no live runner serves repository docs/);
    await call('cancel_task', { id: docs });

    // The fleet's view: three live runners.
    const fleet = laptop.db.prepare(`SELECT host, state FROM runners ORDER BY host`).all() as { host: string; state: string }[];
    expect(fleet).toEqual([
      { host: 'host-a', state: 'active' },
      { host: 'host-b', state: 'active' },
      { host: 'host-c', state: 'active' },
    ]);
  }, 300_000);

  it('kill -9 of one runner: its workers die with it, its running tasks are orphaned after its lease expires, and the others keep going', async () => {
    // Each worker leaves an escaped descendant (own session, ignores SIGTERM), as real agents' tools can.
    for (const n of ['host-a', 'host-b']) if (!runners[n]) startRunner(n);
    await until(() => (laptop.db.prepare(`SELECT COUNT(*) AS n FROM runners WHERE state = 'active' AND host IN ('host-a', 'host-b')`).get() as { n: number }).n === 2, 30_000, 'a and b to be up');
    // Claims take no fleet-wide turns: whichever runner looks first may fill its 4 slots, so the split is 3/3
    // or 4/2. The 4/2 one is made here (a held back while b claims): the runner killed must be the one
    // holding more, or its survivor is full until its own 30 s tasks end and no new work can flow.
    runners['host-a'].kill('SIGSTOP');
    let ids: string[];
    try {
      ids = await submit('api', 6, { sleep_ms: 30_000, escape: true });
      await until(() => Object.values(statuses(ids)).filter((s) => s !== 'queued').length === 4, 20_000, 'b to claim its 4 slots');
    } finally {
      runners['host-a'].kill('SIGCONT');
    }
    await until(() => Object.values(statuses(ids)).filter((s) => s === 'running').length === 6, 30_000, () => `six long tasks (the repository limit) to run on a and b\n${fleetState(ids)}`);
    const placed = placements(ids);
    const on = (host: string) => ids.filter((id) => placed.get(id)![0].host === host);
    expect(on('host-a').length).toBeGreaterThan(0);
    expect(on('host-b').length).toBeGreaterThan(0);
    const [victim, survivor] = on('host-a').length >= on('host-b').length ? ['host-a', 'host-b'] : ['host-b', 'host-a'];
    const onV = on(victim);
    const onS = on(survivor);
    await until(() => escapedPids(onV).length === onV.length, 20_000, `${victim}'s workers to report their escaped descendants`);
    const pidsV = escapedPids(onV);
    expect(pidsV.every((p) => p > 0 && isAlive(p))).toBe(true);
    runners[victim].kill('SIGKILL');
    await exited(runners[victim]);
    await until(() => onV.every((id) => statuses([id])[id] === 'orphaned'), 20_000, `${victim}'s tasks to be orphaned by another runner`);
    const runnerRows = laptop.db.prepare(`SELECT host, state FROM runners WHERE host = ?`).all(victim) as { state: string }[];
    expect(runnerRows.map((r) => r.state)).toContain('lost');
    // The others keep going: the survivor's tasks still run, and new work flows beside them — done while
    // they still run, not after they end (their slots freed would hide a fleet that takes no new work).
    expect(Object.values(statuses(onS)).every((s) => s === 'running')).toBe(true);
    const more = await submit('api', 4, {});
    await until(() => Object.values(statuses(more)).every((s) => s === 'completed'), 25_000, () => `new work after the loss (${onV.length} on ${victim}, ${onS.length} on ${survivor})\n${fleetState([...ids, ...more])}`);
    expect(Object.values(statuses(onS)).every((s) => s === 'running')).toBe(true);
    // Nobody on another host can kill the victim's workers: its spawner helper killed them as it died (escaped ones too).
    await until(() => pidsV.every((p) => !isAlive(p)), 20_000, `${victim}'s spawner helper to kill its trees as it died`);
    startRunner(victim);
    for (const [id, st] of Object.entries(statuses(onS))) if (st === 'running') await call('cancel_task', { id });
    await until(() => Object.values(statuses(onS)).every((s) => s === 'cancelled' || s === 'completed'), 20_000, `${survivor}'s tasks to end`);
    // Nothing ran twice: the orphaned tasks were not picked up again by anyone.
    const keys = logLines().map((l) => `${l.task}#${l.attempt}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(Object.values(statuses(onV)).every((s) => s === 'orphaned')).toBe(true);
  }, 180_000);

  it('a runner cut off longer than its lease (SIGSTOP) has its workers killed by its spawner helper before its lease expires, is lost, and joins again as a new runner when it wakes', async () => {
    const ids = await submit('api', 6, { sleep_ms: 30_000, escape: true });
    await until(() => Object.values(statuses(ids)).filter((s) => s === 'running').length === 6, 30_000, () => `six long tasks to run on a and b\n${fleetState(ids)}`);
    const placed = placements(ids);
    const onB = ids.filter((id) => placed.get(id)![0].host === 'host-b');
    expect(onB.length).toBeGreaterThan(0);
    await until(() => escapedPids(onB).length === onB.length, 20_000, "b's workers to report their escaped descendants");
    const pidsB = escapedPids(onB);
    const runnerB = (laptop.db.prepare(`SELECT id FROM runners WHERE host = 'host-b' AND state = 'active'`).get() as { id: string }).id;
    runners['host-b'].kill('SIGSTOP');
    try {
      await until(() => onB.every((id) => statuses([id])[id] === 'orphaned'), 20_000, "b's tasks to be orphaned while it is stopped");
      // Nobody else can kill b's workers, but b's spawner helper did, before b's lease could expire (self-fencing).
      expect(pidsB.filter((p) => isAlive(p))).toEqual([]);
    } finally {
      runners['host-b'].kill('SIGCONT');
    }
    // b wakes, finds its lease gone, and registers again.
    await until(() => (laptop.db.prepare(`SELECT COUNT(*) AS n FROM runners WHERE host = 'host-b' AND state = 'active' AND id != ?`).get(runnerB) as { n: number }).n === 1, 20_000, 'b to join again');
    expect(Object.values(statuses(onB)).every((s) => s === 'orphaned')).toBe(true);
    const rest = ids.filter((id) => !onB.includes(id));
    for (const [id, st] of Object.entries(statuses(rest))) if (st === 'running') await call('cancel_task', { id });
    const more = await submit('api', 6, {});
    await until(() => Object.values(statuses(more)).every((s) => s === 'completed'), 30_000, 'work to flow after b rejoined');
    const keys = logLines().map((l) => `${l.task}#${l.attempt}`);
    expect(new Set(keys).size).toBe(keys.length);
  }, 180_000);

  it('a secret sealed on the laptop runs on another host only with the fleet’s shared key_file; without it the task waits, and the runner says why', async () => {
    const objective = 'deploy the web app with password=CorrectHorse42 and report';
    if (!runners['host-c'] || runners['host-c'].exitCode !== null) startRunner('host-c');
    const prompts = join(t.dir, 'prompts.jsonl');
    const submitWeb = async () => (await call('delegate_task', { objective, workspace: clones.laptop.web, metadata: { mock: { append_log: log, prompt_log: prompts } } })).task.id as string;
    const first = await submitWeb();
    await until(() => /cannot open tasks sealed with key [0-9a-f]{16}/.test(stderrOf['host-c']()), 30_000, () => `host-c to say it cannot open the sealed task: ${stderrOf['host-c']()}`);
    expect(statuses([first])[first]).toBe('queued');
    // One key for the fleet (here the laptop's, so what it sealed already opens too): host-c restarts to load it.
    const keyFile = join(t.dir, 'fleet.key');
    writeFileSync(keyFile, readFileSync(join(homes.laptop, 'secret.key')), { mode: 0o600 });
    for (const name of ['laptop', 'host-c']) writeFileSync(join(homes[name], 'config.toml'), readFileSync(join(homes[name], 'config.toml'), 'utf8').replace(/^\[store\]\n/, `[store]\nkey_file = "${keyFile}"\n`));
    laptop.close();
    laptop = new Engine({ home: homes.laptop });
    runners['host-c'].kill('SIGTERM');
    await exited(runners['host-c']);
    startRunner('host-c');
    await until(() => statuses([first])[first] === 'completed', 30_000, 'the waiting sealed task to complete on host-c with the shared key');
    const second = await submitWeb();
    await until(() => ['failed', 'completed'].includes(statuses([second])[second]), 30_000, 'the sealed task to end on host-c with the shared key');
    expect((await call('get_task', { id: second })).task).toMatchObject({ status: 'completed', objective: expect.stringContaining('[REDACTED]') });
    // The worker on host-c got the real text; the store never held it.
    const seen = readFileSync(prompts, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { prompt: string });
    expect(seen.at(-1)!.prompt).toContain('password=CorrectHorse42');
    expect(JSON.stringify(laptop.db.prepare('SELECT objective FROM tasks WHERE id = ?').get(second))).not.toContain('CorrectHorse42');
  }, 120_000);
});
