import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { harmStore, loggedPids, type Harm } from '../helpers/damage.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN } from '../helpers/cli.js';

/**
 * A store harmed under a running leader with 50 tasks: deleted, truncated, or its middle pages overwritten.
 * The leader notices (at its next beat, or its next quick_check: check_interval_s = 1 here), kills what it
 * ran and exits 1 naming the store and what to do; no later command creates an empty store in its place or
 * calls the damaged one healthy, and `doctor` says what is wrong.
 */
const t = tempDir('lw-damage-');
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map((c) => exited(c)));
  t.cleanup();
});

const TASKS = 50;

/** A home with 50 queued tasks (4 of them run 60 s, the rest a moment) and a leader running them. */
async function homeWithLeader(name: string): Promise<{ home: string; log: string; leader: ChildProcess; stderr: () => string; ids: string[] }> {
  const home = join(t.dir, name);
  const repo = makeRepo(join(t.dir, `${name}-repo`));
  const log = join(t.dir, `${name}.log`);
  const engine = new Engine({ home });
  writeFileSync(engine.home.config, '[store]\ncheck_interval_s = 1\n[scheduler]\nkill_grace_ms = 300\nmax_concurrency = 4\nper_root = 4\nper_repository = 4\n');
  const ids: string[] = [];
  const ctx = { engine, face: 'cli' as const, depth: 0 };
  for (let i = 0; i < TASKS; i++) {
    const mock = i < 4 ? { sleep_ms: 60_000, append_log: log } : { sleep_ms: 50 };
    const r = (await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `damage probe ${i}`, kind: 'explore', workspace: repo, worker: 'mock', metadata: { mock } })) as { task: { id: string } };
    ids.push(r.task.id);
  }
  engine.close();
  const leader = startCli(['run'], { home });
  children.push(leader);
  const stderr = captureStderr(leader);
  await until(() => loggedPids(log).length >= 4, 60_000, () => `4 long tasks running\n${stderr()}`);
  return { home, log, leader, stderr, ids };
}

describe.each<Harm>(['delete', 'truncate', 'corrupt'])('a store harmed under its leader: %s', (harm) => {
  it('stops the leader with the reason, kills what it ran; no command recreates or trusts the store; doctor says so', async () => {
    const { home, log, leader, stderr } = await homeWithLeader(harm);
    const db = join(home, 'lightworker.db');
    harmStore(db, harm);
    const code = await Promise.race([exited(leader), new Promise<string>((r) => setTimeout(() => r('still running'), 30_000))]);
    expect(code, `the leader must stop on its own\n${stderr()}`).toBe(1);
    const said = stderr();
    // A harmed page is found by the leader's quick_check, or first by SQLite itself on a read or write.
    const damage = /failed (its integrity check|a read or write)( \(|: )/;
    expect(said).toMatch(harm === 'delete' ? /the store .*lightworker\.db was deleted/ : harm === 'truncate' ? /the store .*lightworker\.db (was truncated|failed (its integrity check|a read or write))/ : damage);
    expect(said).toMatch(/fix: /);
    // Its workers went with it (SIGKILL at once, no grace).
    await until(() => loggedPids(log).every((p) => !isAlive(p)), 10_000, 'the leader’s workers gone');

    // No command creates a store where one was, or works on the damaged one as if healthy.
    const tasks = await runCli(['tasks'], { home });
    expect(tasks.code, tasks.stdout).not.toBe(0);
    expect(tasks.stderr).toMatch(/store_damaged/);
    if (harm === 'delete') expect(existsSync(db)).toBe(false);
    const doctor = await runCli(['doctor'], { home });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/FAIL\s+database\s+the store .*lightworker\.db (is missing|cannot be opened|cannot be read)/);
    const rerun = await runCli(['run', '--until-idle'], { home, timeoutMs: 30_000 });
    expect(rerun.code).not.toBe(0);
    expect(rerun.stderr).toMatch(/store_damaged/);

    if (harm === 'delete') {
      // What the leader held is saved: every task is in it, and it is a sound database.
      const rescued = readdirSync(home).find((f) => f.startsWith('lightworker.db.rescued-'));
      expect(rescued, said).toBeTruthy();
      const copy = new Database(join(home, rescued!), { readonly: true });
      expect((copy.prepare('SELECT count(*) AS n FROM tasks').get() as { n: number }).n).toBe(TASKS);
      expect(copy.pragma('quick_check', { simple: true })).toBe('ok');
      copy.close();
    }

    // The explicit way on: a new, empty store, the harmed files kept beside it.
    const init = await runCli(['init', '--new-store'], { home });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toMatch(/new, empty/);
    const after = await runCli(['doctor', '--json'], { home });
    const database = (JSON.parse(after.stdout) as { checks: { name: string; ok: boolean }[] }).checks.find((c) => c.name === 'database');
    expect(database?.ok).toBe(true);
  }, 120_000);
});

describe('a store that is gone before any command opens it', () => {
  it('a missing or emptied lightworker.db with the marker present is an error; nothing is created', async () => {
    const home = join(t.dir, 'quiet');
    new Engine({ home }).close();
    const db = join(home, 'lightworker.db');
    writeFileSync(db, '');
    const empty = await runCli(['tasks'], { home });
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toMatch(/is empty \(0 bytes: truncated\), but this home had one \(store \w+/);
    harmStore(db, 'delete');
    const submit = await runCli(['submit', '-w', t.dir, 'hello'], { home });
    expect(submit.code).not.toBe(0);
    expect(submit.stderr).toMatch(/is missing \(deleted or moved\).*lightworker init --new-store/);
    expect(existsSync(db)).toBe(false);
  }, 60_000);
});

describe('a store harmed under a standby MCP server', () => {
  it('its calls answer store_damaged with the reason and the fix, never "shutting down" or a TypeError', async () => {
    const home = join(t.dir, 'mcp-standby');
    new Engine({ home }).close();
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: { ...(process.env as Record<string, string>), LIGHTWORKER_HOME: home }, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'damage', version: '1' });
    await client.connect(transport);
    try {
      const first = (await client.callTool({ name: 'list_tasks', arguments: {} })) as { isError?: boolean };
      expect(first.isError, stderr).toBeFalsy();
      harmStore(join(home, 'lightworker.db'), 'delete');
      let answer: { isError?: boolean; structuredContent?: { code?: string; message?: string } } = {};
      await until(async () => {
        answer = (await client.callTool({ name: 'list_tasks', arguments: {} })) as typeof answer;
        return answer.isError === true;
      }, 30_000, () => `list_tasks still answered after the store was deleted\n${stderr}`);
      expect(answer.structuredContent?.code, JSON.stringify(answer)).toBe('store_damaged');
      expect(answer.structuredContent?.message).toMatch(/lightworker\.db was deleted.*fix: /);
      expect(stderr).not.toMatch(/TypeError|\n\s+at /);
    } finally {
      await client.close();
    }
  }, 60_000);
});
