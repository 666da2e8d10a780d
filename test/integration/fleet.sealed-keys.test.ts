import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/env.js';
import { until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { homeKeyId } from '../../main/tasks/secrets.js';

/**
 * Two runners of one PostgreSQL store with different `[store] key_file`s. A task whose secret was sealed
 * with key A (the laptop's, shared with host-a) is left queued by host-b, which cannot open it — it says
 * so, in its log and in `doctor`, naming the key — and runs on host-a, which can: it is never failed by
 * the runner holding the wrong key. Host-b keeps running what it can open.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;
let keyA: string;
let keyB: string;

beforeAll(() => {
  t = tempDir('lw-sealkeys-');
  keyA = join(t.dir, 'a.key');
  keyB = join(t.dir, 'b.key');
  writeFileSync(keyA, randomBytes(32), { mode: 0o600 });
  writeFileSync(keyB, randomBytes(32), { mode: 0o600 });
  // The laptop seals with key A, which host-a holds too; host-b holds key B.
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a', 'host-b'], keyFileOf: (h) => (h === 'host-b' ? keyB : keyA) });
});

afterAll(async () => {
  await fleet?.close();
  t?.cleanup();
});

describe('runners with different key files', () => {
  it('a runner that cannot open a sealed task leaves it (saying so, naming the key) for one that can, which runs it with the real text', async () => {
    const prompts = join(t.dir, 'prompts.jsonl');
    fleet.start('host-b');
    const { task } = await fleet.call('delegate_task', {
      objective: 'deploy the api with password=CorrectHorse42 and report',
      workspace: join(t.dir, 'laptop', 'src', 'api'),
      metadata: { mock: { prompt_log: prompts } },
    });
    const sealed = task.id as string;
    const idA = homeKeyId(fleet.homes.laptop);
    await until(() => fleet.stderr['host-b']().includes(`cannot open tasks sealed with key ${idA}`), 30_000, () => `host-b to say it cannot open the task: ${fleet.stderr['host-b']()}`);
    // It still runs what it can open, and the sealed task waits, untouched.
    const [plain] = await fleet.submit(1, {});
    await until(() => fleet.status(plain).status === 'completed', 30_000, 'a plain task to complete on b');
    expect(fleet.status(sealed)).toMatchObject({ status: 'queued', attempt: 1, runnerId: null });
    const doctor = JSON.parse((await runCli(['doctor', '--json'], { home: fleet.homes['host-b'] })).stdout) as { checks: { name: string; ok: boolean; detail: string }[] };
    const check = doctor.checks.find((c) => c.name === 'sealed tasks')!;
    expect(check.ok).toBe(false);
    expect(check.detail).toContain(`this runner cannot open tasks sealed with key ${idA}`);
    expect(check.detail).toContain('1 queued task sealed');
    // The runner holding key A opens and runs it; the worker gets the real text, the store never holds it.
    fleet.start('host-a');
    await until(() => fleet.status(sealed).status === 'completed', 30_000, () => `the sealed task to complete on a: ${JSON.stringify(fleet.status(sealed))}\n${fleet.stderr['host-a']()}`);
    expect(fleet.hostOfRunner(fleet.status(sealed).runnerId)).toBe('host-a');
    expect(fleet.laptop.db.prepare(`SELECT COUNT(*) AS n FROM events WHERE task_id = ? AND type = 'task.status' AND payload LIKE '%"to":"failed"%'`).get(sealed)).toEqual({ n: 0 });
    const seen = readFileSync(prompts, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { prompt: string });
    expect(seen.at(-1)!.prompt).toContain('password=CorrectHorse42');
    expect(JSON.stringify(fleet.laptop.db.prepare('SELECT objective, metadata FROM tasks WHERE id = ?').get(sealed))).not.toContain('CorrectHorse42');
    const after = JSON.parse((await runCli(['doctor', '--json'], { home: fleet.homes['host-b'] })).stdout) as { checks: { name: string; ok: boolean }[] };
    expect(after.checks.find((c) => c.name === 'sealed tasks')!.ok).toBe(true);
  }, 120_000);
});
