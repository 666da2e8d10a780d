import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { anchorChains, appendAnyEvent } from '../../main/store/events.js';
import type { Db } from '../../main/store/db.js';
import { deleteTreeRows } from '../../main/store/gc.js';
import { getSetting, setSetting } from '../../main/store/settings.js';
import { measureHome } from '../../main/isolation/home-size.js';
import { runCli, startCli } from '../helpers/cli.js';
import { until } from '../helpers/procs.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { drive, git, newExecuteTask, simulateRun } from './isolation.helpers.js';

let homes: TestHome[] = [];
afterEach(() => {
  for (const h of homes) h.cleanup();
  homes = [];
});
const home = () => {
  const h = makeHome();
  homes.push(h);
  return h;
};

const countIn = (db: Db, sql: string, ...args: unknown[]) => Number((db.prepare(sql).get(...args) as { n: number }).n);
const count = (h: TestHome, sql: string, ...args: unknown[]) => countIn(h.engine.db, sql, ...args);

/** An explore task run to its end, with a log file of its own under artifacts/. */
async function endedExplore(h: TestHome, objective: string): Promise<string> {
  const { task } = await h.call('delegate_task', { objective, workspace: h.repo });
  drive(h, task.id, 'starting', 'running', 'verifying', 'completed');
  mkdirSync(join(h.home, 'artifacts', task.id, 'attempt-1'), { recursive: true });
  writeFileSync(join(h.home, 'artifacts', task.id, 'attempt-1', 'raw.log'), 'x'.repeat(10_000));
  return task.id;
}

describe('lightworker gc', () => {
  it('deletes ended trees with their events, files, worktrees and branches; keeps unaccepted work unless --force; audit verify stays clean and names the tombstones', async () => {
    const h = home();
    const plain = await endedExplore(h, 'look around');
    const empty = await newExecuteTask(h);
    const emptyRun = await simulateRun(h, empty, () => {});
    const valuable = await newExecuteTask(h);
    await simulateRun(h, valuable, (dir) => writeFileSync(join(dir, 'work.txt'), 'valuable\n'));
    const { task: live } = await h.call('delegate_task', { objective: 'still queued', workspace: h.repo });
    // Every chain anchored: deleting its events without a tombstone is what audit verify reports.
    anchorChains(h.engine.db);

    const dry = await h.call('gc_home', { older_than: '0s' });
    const byRoot = new Map(dry.trees.map((t: any) => [t.rootId, t]));
    expect(byRoot.get(plain)).toMatchObject({ action: 'delete', tasks: 1 });
    expect((byRoot.get(plain) as any).bytes).toBeGreaterThan(10_000);
    expect(byRoot.get(empty.id)).toMatchObject({ action: 'delete' });
    expect(byRoot.get(valuable.id)).toMatchObject({ action: 'keep', reason: expect.stringMatching(/holds commits (nobody accepted|found on no other branch).*--force/) });
    expect(byRoot.has(live.id)).toBe(false);
    expect(dry).toMatchObject({ applied: false, totals: { trees: 2, tasks: 2, kept: 1 } });
    // A dry run changed nothing.
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks')).toBe(4);
    expect(existsSync(join(h.home, 'artifacts', plain))).toBe(true);
    expect(existsSync(emptyRun.ws.workdir)).toBe(true);

    // A host pin left on an ended task (a version that kept it past the end) goes with the task.
    h.engine.write(() => setSetting(h.engine.db, `run_host.${plain}`, 'host-a'));
    const applied = await h.call('gc_home', { older_than: '0s', apply: true });
    expect(applied.totals).toMatchObject({ trees: 2, tasks: 2 });
    expect(getSetting(h.engine.db, `run_host.${plain}`)).toBeNull();
    expect(applied.totals.bytes).toBeGreaterThan(10_000);
    for (const id of [plain, empty.id]) {
      expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id = ?', id)).toBe(0);
      expect(count(h, 'SELECT COUNT(*) AS n FROM events WHERE task_id = ?', id)).toBe(0);
      expect(count(h, 'SELECT COUNT(*) AS n FROM attempts WHERE task_id = ?', id)).toBe(0);
      expect(existsSync(join(h.home, 'artifacts', id))).toBe(false);
    }
    expect(existsSync(emptyRun.ws.workdir)).toBe(false);
    expect(git(h.repo, 'branch', '--list', `lightworker/${empty.id}`)).toBe('');
    expect(git(h.repo, 'worktree', 'list')).not.toContain(empty.id);
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id IN (?, ?)', valuable.id, live.id)).toBe(2);

    let audit = await h.call('audit_verify');
    expect(audit).toMatchObject({ ok: true, tombstones: { count: 2 } });
    expect(audit.tombstones.trees.map((t: any) => t.rootId).sort()).toEqual([plain, empty.id].sort());
    const printed = await runCli(['audit', 'verify'], { home: h.home });
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/^ok: \d+ events, chain intact; 2 tree\(s\) deleted by gc, each with a signed tombstone:/);
    expect(printed.stdout).toContain(`tree ${plain} (1 task(s)) deleted by gc`);

    // --force takes the unaccepted branch too; the queued tree is never touched.
    const forced = await h.call('gc_home', { older_than: '0s', apply: true, force: true });
    expect(forced.trees.map((t: any) => t.rootId)).toEqual([valuable.id]);
    expect(forced.trees[0].reason).toMatch(/because of --force/);
    expect(git(h.repo, 'branch', '--list', `lightworker/${valuable.id}`)).toBe('');
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id = ?', live.id)).toBe(1);
    anchorChains(h.engine.db);
    audit = await h.call('audit_verify');
    expect(audit).toMatchObject({ ok: true, tombstones: { count: 3 } });

    // doctor's size of the store, on either backend (the SQLite file, or the PostgreSQL schema's relations).
    expect(measureHome(h.engine).database.bytes).toBeGreaterThan(8192);
    // Nothing older than 30 days: nothing found.
    expect((await h.call('gc_home', { older_than: '30d', apply: true })).totals.trees).toBe(0);
  });

  it('a deletion made to look like gc (a tombstone without the home key) and one without a tombstone both break audit verify', async () => {
    const h = home();
    const a = await endedExplore(h, 'one');
    const b = await endedExplore(h, 'two');
    anchorChains(h.engine.db);
    await h.call('gc_home', { older_than: '0s', apply: true });
    expect((await h.call('audit_verify')).ok).toBe(true);
    // Someone with the database but not the key: forges a tombstone for a tree it deletes by hand.
    const c = await endedExplore(h, 'three');
    anchorChains(h.engine.db);
    const head = h.engine.db.prepare('SELECT pos, hash FROM chain_heads WHERE chain = ?').get(c) as { pos: number; hash: string };
    h.engine.write(() => {
      h.engine.db.prepare('DELETE FROM events WHERE chain = ?').run(c);
      h.engine.db.prepare('DELETE FROM chain_heads WHERE chain = ?').run(c);
      appendAnyEvent(h.engine.db, null, 'tree.deleted', { rootId: c, tasks: [c], chains: [[c, head.pos, head.hash]], endedAt: 0, olderThan: '0s', signature: 'ab'.repeat(32) });
    });
    const forged = await h.call('audit_verify');
    expect(forged.ok).toBe(false);
    expect(forged.broken.reason).toMatch(/not signed by this home's key/);
    // The same deletion with no tombstone at all: the anchor still names the chain.
    const h2 = home();
    const d = await endedExplore(h2, 'four');
    anchorChains(h2.engine.db);
    h2.engine.write(() => {
      h2.engine.db.prepare('DELETE FROM events WHERE chain = ?').run(d);
      h2.engine.db.prepare('DELETE FROM chain_heads WHERE chain = ?').run(d);
    });
    const bare = await h2.call('audit_verify');
    expect(bare.ok).toBe(false);
    expect(bare.broken.reason).toMatch(/all events of task .* were deleted/);
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id IN (?, ?)', a, b)).toBe(0);
  });

  it('the delete transaction reads the tree again: a task retried (or a tree made a dependency) since the look is left alone', async () => {
    const h = home();
    const { task: failed } = await h.call('delegate_task', { objective: 'retried later', workspace: h.repo });
    drive(h, failed.id, 'starting', 'running', 'failed');
    const id = failed.id as string;
    const other = await endedExplore(h, 'depended on');
    const sign = () => 'unused';
    await h.call('retry_task', { id, strategy: 'same' });
    expect(h.engine.write(() => deleteTreeRows(h.engine.db, id, Date.now() + 1000, '0s', sign))).toBeNull();
    // A task joins its first dependency's tree; a second dependency in another tree is a link across trees.
    const third = await endedExplore(h, 'first dependency');
    await h.call('delegate_task', { objective: 'needs both', workspace: h.repo, depends_on: [third, other] });
    expect(h.engine.write(() => deleteTreeRows(h.engine.db, other, Date.now() + 1000, '0s', sign))).toBeNull();
    expect(h.engine.write(() => deleteTreeRows(h.engine.db, other, Date.now() - 60_000, '0s', sign))).toBeNull();
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id IN (?, ?)', id, other)).toBe(2);
    expect(count(h, 'SELECT COUNT(*) AS n FROM events WHERE chain IN (?, ?)', id, other)).toBeGreaterThan(4);
    const dry = await h.call('gc_home', { older_than: '0s' });
    expect(dry.trees.find((t: any) => t.rootId === other)).toMatchObject({ action: 'keep', reason: expect.stringContaining('of other trees depend on it') });
  });

  it('a gc killed mid-way loses nothing it kept and leaves a log that verifies; the next gc finishes the job', async () => {
    const h = home();
    const ids: string[] = [];
    for (let i = 0; i < 150; i++) ids.push(await endedExplore(h, `tree ${i}`));
    anchorChains(h.engine.db);
    const gc = startCli(['gc', '--older-than', '0s', '--apply'], { home: h.home });
    const exited = new Promise((r) => gc.once('exit', r));
    const look = h.connect();
    try {
      await until(() => countIn(look, "SELECT COUNT(*) AS n FROM events WHERE type = 'tree.deleted'") >= 3, 60_000, 'the gc deleted a few trees');
    } finally {
      look.close();
    }
    gc.kill('SIGKILL');
    await exited;
    const mid = await h.call('audit_verify');
    expect(mid.ok, JSON.stringify(mid.broken)).toBe(true);
    const left = count(h, 'SELECT COUNT(*) AS n FROM tasks');
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(150);
    expect(mid.tombstones.count).toBe(150 - left);
    const again = await runCli(['gc', '--older-than', '0s', '--apply', '--json'], { home: h.home });
    expect(again.code, again.stderr).toBe(0);
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks')).toBe(0);
    for (const id of ids) expect(existsSync(join(h.home, 'artifacts', id))).toBe(false);
    expect(await h.call('audit_verify')).toMatchObject({ ok: true, tombstones: { count: 150 } });
  });

  it('refuses a bad --older-than naming it, changing nothing; an agent may look but not delete', async () => {
    const h = home();
    const id = await endedExplore(h, 'keep me');
    for (const bad of ['30x', '-5d', 'd', '1.5d', '']) {
      await expect(h.call('gc_home', { older_than: bad, apply: true })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('older_than') });
    }
    await expect(h.call('gc_home', { older_than: '0s', apply: true }, 'mcp')).rejects.toMatchObject({ code: 'forbidden' });
    expect((await h.call('gc_home', { older_than: '0s' }, 'mcp')).totals.trees).toBe(1);
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id = ?', id)).toBe(1);
    const cli = await runCli(['gc', '--older-than', '30x', '--apply'], { home: h.home });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('--older-than: expected an age like 30d');
    expect(count(h, 'SELECT COUNT(*) AS n FROM tasks WHERE id = ?', id)).toBe(1);
  });
});

describe('lightworker export / import', () => {
  it('moves ended trees to another home with their results and verifiable events; twice does not duplicate; a damaged line refuses the whole file', async () => {
    const src = home();
    const a = await endedExplore(src, 'first tree');
    src.engine.write(() => src.engine.db.prepare("UPDATE tasks SET result = '{\"summary\":\"found it\"}' WHERE id = ?").run(a));
    const { task: parent } = await src.call('delegate_task', { objective: 'parent', workspace: src.repo });
    drive(src, parent.id, 'starting', 'running', 'verifying', 'completed');
    const { task: live } = await src.call('delegate_task', { objective: 'not ended', workspace: src.repo });
    const file = join(src.root, 'trees.jsonl');
    const out = await runCli(['export'], { home: src.home });
    expect(out.code, out.stderr).toBe(0);
    writeFileSync(file, out.stdout);
    expect(out.stderr).toContain('exported 2 tree(s)');
    expect(out.stdout).not.toContain(live.id);
    await expect(src.call('export_trees', { root_id: live.id })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining('not ended') });

    const one = await runCli(['export', '--tree', a], { home: src.home });
    expect(one.code, one.stderr).toBe(0);
    expect(one.stderr).toContain('exported 1 tree(s), 1 task(s)');
    expect(one.stdout).not.toContain(parent.id);
    const dst = home();
    const first = await dst.call('import_trees', { file });
    expect(first.imported.map((t: any) => t.rootId).sort()).toEqual([a, parent.id].sort());
    const got = (await dst.call('get_task', { id: a })).task;
    expect(got).toMatchObject({ id: a, status: 'completed', objective: 'first tree' });
    expect(JSON.stringify(got.result)).toContain('found it');
    const events = await dst.call('get_events', { task_id: a, limit: 100 });
    expect(events.events.map((e: any) => e.type)).toContain('task.created');
    expect((await dst.call('audit_verify')).ok).toBe(true);
    const tasksAfter = count(dst, 'SELECT COUNT(*) AS n FROM tasks');
    const eventsAfter = count(dst, 'SELECT COUNT(*) AS n FROM events');

    const again = await dst.call('import_trees', { file });
    expect(again.imported).toEqual([]);
    expect(again.skipped.map((s: any) => s.reason)).toEqual([expect.stringContaining('already in this home'), expect.stringContaining('already in this home')]);
    expect(count(dst, 'SELECT COUNT(*) AS n FROM tasks')).toBe(tasksAfter);

    // One damaged line (an event edited, then a cut): refused, naming the line, and nothing of the file lands.
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const at = lines.findIndex((l) => l.includes('"kind":"event"') && l.includes(parent.id));
    const edited = [...lines];
    edited[at] = edited[at].replace('"task.created"', '"task.CREATED"');
    const third = home();
    writeFileSync(join(third.root, 'edited.jsonl'), edited.join('\n'));
    await expect(third.call('import_trees', { file: join(third.root, 'edited.jsonl') })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringContaining(`line ${at + 1}:`) });
    writeFileSync(join(third.root, 'cut.jsonl'), lines.slice(0, -3).join('\n'));
    await expect(third.call('import_trees', { file: join(third.root, 'cut.jsonl') })).rejects.toMatchObject({ message: expect.stringMatching(/no end line/) });
    writeFileSync(join(third.root, 'junk.jsonl'), [lines[0], '{not json', ...lines.slice(1)].join('\n'));
    await expect(third.call('import_trees', { file: join(third.root, 'junk.jsonl') })).rejects.toMatchObject({ message: expect.stringContaining('line 2: not JSON') });
    expect(count(third, 'SELECT COUNT(*) AS n FROM tasks')).toBe(0);
    expect(count(third, 'SELECT COUNT(*) AS n FROM events')).toBe(0);
    expect(count(dst, 'SELECT COUNT(*) AS n FROM events')).toBe(eventsAfter);

    // A tree gc deleted here does not come back from an old export.
    anchorChains(dst.engine.db);
    await dst.call('gc_home', { older_than: '0s', apply: true });
    const back = await dst.call('import_trees', { file });
    expect(back.imported).toEqual([]);
    expect(back.skipped[0].reason).toContain('deleted from this home by gc');
    expect((await dst.call('audit_verify')).ok).toBe(true);
  });
});
