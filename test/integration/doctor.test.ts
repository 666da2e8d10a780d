import { createServer, type Server } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../main/core/config.js';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
let server: Server | null = null;
let svc: SchedulerService | null = null;
beforeEach(() => {
  h = makeHome();
});
afterEach(async () => {
  await svc?.stop();
  svc = null;
  server?.close();
  server = null;
  delete process.env.LW_DOCTOR_TEST_KEY;
  h.cleanup();
});

const check = (r: { checks: { name: string }[] }, name: string) => r.checks.find((c) => c.name === name) as any;

describe('doctor', () => {
  it("reports the home's size by part (database, logs, worktrees, snapshots, artifacts), and what frees it", async () => {
    mkdirSync(join(h.home, 'artifacts', 'X'), { recursive: true });
    writeFileSync(join(h.home, 'artifacts', 'X', 'big.log'), Buffer.alloc(3 * 1024 * 1024));
    mkdirSync(join(h.home, 'worktrees', 'W'), { recursive: true });
    writeFileSync(join(h.home, 'worktrees', 'W', 'f'), Buffer.alloc(1024 * 1024));
    const size = check(await h.call('run_doctor'), 'home size');
    expect(size.ok).toBe(true);
    expect(size.sizes.artifacts).toBeGreaterThanOrEqual(3 * 1024 * 1024);
    expect(size.sizes.worktrees).toBeGreaterThanOrEqual(1024 * 1024);
    expect(size.sizes.database).toBeGreaterThan(0);
    expect(size.sizes.total).toBeGreaterThanOrEqual(size.sizes.artifacts + size.sizes.worktrees + size.sizes.database);
    expect(size.detail).toMatch(/^\d+\.\d MiB: database [\d.]+ MiB, logs [\d.]+ MiB, worktrees 1\.0 MiB, snapshots [\d.]+ MiB, artifacts 3\.0 MiB; `lightworker gc --older-than 30d`/);
  });

  it('reports each worker CLI (never running a model) and who leads', async () => {
    let r = await h.call('run_doctor');
    expect(check(r, 'worker mock')).toMatchObject({ ok: true });
    for (const w of ['codex', 'claude-code', 'opencode']) expect(check(r, `worker ${w}`)).toBeDefined();
    expect(check(r, 'scheduler').detail).toMatch(/no process leads/);
    svc = await startSchedulerService(h.engine);
    r = await h.call('run_doctor');
    expect(check(r, 'scheduler').detail).toMatch(new RegExp(`led by pid ${process.pid}`));
  });

  it('fails an unreachable gateway or a missing key with a fix, and passes a reachable one', async () => {
    server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    writeFileSync(
      h.engine.home.config,
      `[gateways.up]\nbase_url = "http://127.0.0.1:${port}/v1"\nkey_env = "LW_DOCTOR_TEST_KEY"\n\n[gateways.down]\nbase_url = "http://127.0.0.1:1/v1"\nkey_env = "LW_DOCTOR_TEST_KEY"\n`,
    );
    h.engine.config = loadConfig(h.engine.home.config);
    let r = await h.call('run_doctor');
    expect(check(r, 'gateway up')).toMatchObject({ ok: false, detail: expect.stringMatching(/LW_DOCTOR_TEST_KEY is not set/) });
    process.env.LW_DOCTOR_TEST_KEY = 'dummy';
    r = await h.call('run_doctor');
    expect(check(r, 'gateway up')).toMatchObject({ ok: true });
    expect(check(r, 'gateway down')).toMatchObject({ ok: false, detail: expect.stringMatching(/does not accept connections/), fix: expect.any(String) });
    expect(r.ok).toBe(false);
  });
});
