import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { COMMANDS } from '../../main/commands/index.js';
import { runCommand } from '../../main/commands/table.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import { captureStderr, exited, isAlive, until } from '../helpers/procs.js';
import { fillDisk, freeDisk, loggedPids, mountSmallFs, type SmallFs } from '../helpers/damage.js';

/**
 * The home on a real file system that fills up (a 24 MB tmpfs; root only). While it is full a leader
 * records no task end and starts nothing new, says once what is full and where, and once space returns
 * records every end, starts the rest and writes a `store.full` event; `run --until-idle` on a full home
 * exits 1 saying why instead of waiting in silence.
 */
const t = tempDir('lw-full-');
const mounted = mountSmallFs(join(t.dir, 'fs'), 24);
const fs: SmallFs | null = 'reason' in mounted ? null : mounted;
if (!fs) {
  const why = (mounted as { reason: string }).reason;
  if (process.env.CI === 'true') throw new Error(`the full-disk tests need a small file system (CI runs as root): ${why}`);
  process.stderr.write(`store.full-disk: skipped: ${why}\n`);
}
const children: ChildProcess[] = [];
let home: string;
let repo: string;
let engine: Engine;

beforeAll(() => {
  if (!fs) return;
  home = join(fs.dir, 'home');
  repo = makeRepo(join(t.dir, 'repo'));
  engine = new Engine({ home });
  writeFileSync(engine.home.config, '[scheduler]\nkill_grace_ms = 300\nmax_concurrency = 3\nper_root = 3\nper_repository = 3\n');
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map((c) => exited(c)));
  engine?.close();
  fs?.unmount();
  t.cleanup();
});

async function submit(mock: Record<string, unknown>, name: string): Promise<string> {
  const r = (await runCommand(COMMANDS, { engine, face: 'cli', depth: 0 }, 'delegate_task', { objective: name, name, kind: 'explore', workspace: repo, worker: 'mock', metadata: { mock } })) as { task: { id: string } };
  return r.task.id;
}

const status = (id: string) => (engine.db.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string }).status;

describe.skipIf(!fs)('a home on a full file system', () => {
  it('holds task ends and new claims while full, says what is full and where, and records everything once space returns', async () => {
    const log = join(t.dir, 'running.log');
    const leader = startCli(['run'], { home });
    children.push(leader);
    const stderr = captureStderr(leader);
    const running = [0, 1, 2].map((i) => submit({ sleep_ms: 2500, append_log: log }, `full ${i}`));
    const ids = await Promise.all(running);
    await until(() => loggedPids(log).length === 3 && ids.every((id) => status(id) === 'running'), 30_000, () => `3 tasks running\n${stderr()}`);
    const queued = await submit({ sleep_ms: 10 }, 'full queued');
    const ballast = fillDisk(fs!.dir);
    // The workers end while the disk is full: their ends cannot be written.
    await until(() => loggedPids(log).every((p) => !isAlive(p)), 30_000, 'the 3 workers to end');
    await until(() => /cannot be written: the file system holding .* is full/.test(stderr()), 30_000, () => `the leader to say the store is full\n${stderr()}`);
    expect(stderr()).toContain(home);
    // Held, not lost, not failed: and nothing new started meanwhile.
    expect(ids.map(status)).toEqual(['running', 'running', 'running']);
    expect(status(queued)).toBe('queued');
    expect(stderr().match(/cannot be written: the file system/g)?.length, 'said once, not in a loop').toBe(1);

    freeDisk(ballast);
    await until(() => [...ids, queued].every((id) => status(id) === 'completed'), 30_000, () => `every task completed once space returned: ${[...ids, queued].map(status).join(', ')}\n${stderr()}`);
    expect(stderr()).toMatch(/can be written again/);
    const spell = engine.db.prepare("SELECT payload FROM events WHERE type = 'store.full'").get() as { payload: string } | undefined;
    expect(spell, 'a store.full event').toBeTruthy();
    expect(JSON.parse(spell!.payload)).toMatchObject({ path: join(home, 'lightworker.db'), home, message: expect.stringMatching(/is full/) });
    leader.kill('SIGTERM');
    await exited(leader);
  }, 120_000);

  it('run --until-idle on a full home exits 1 with the reason instead of waiting silently', async () => {
    const id = await submit({ sleep_ms: 10 }, 'full idle');
    const ballast = fillDisk(fs!.dir);
    try {
      const r = await runCli(['run', '--until-idle', '--stall-timeout', '2'], { home, timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/(cannot make progress: )?the store .*lightworker\.db cannot be written: the file system holding .* is full/);
    } finally {
      freeDisk(ballast);
    }
    const again = await runCli(['run', '--until-idle'], { home, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(status(id)).toBe('completed');
  }, 120_000);
});
