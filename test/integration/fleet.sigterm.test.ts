import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';
import { exited, isAlive, until } from '../helpers/procs.js';
import { makeFleetHosts, type FleetHosts } from '../helpers/fleet-hosts.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * A runner told to stop (SIGTERM) stops promptly whatever its store does: its server silent (a black hole:
 * connections open, nothing answered), or its connection left waiting for the answer to a query the network
 * lost (a short black hole, then the network back: the server idle, the runner waiting). A store call blocks
 * the runner's event loop, so it must end on its own long before the store's call timeout (120 s); what the
 * runner could not write is left for recovery. Its workers are dead when it has exited.
 */
const url = process.env.LIGHTWORKER_TEST_PG_URL;
if (!url) throw new Error(`the fleet tests run in the postgres project (a test PostgreSQL): ${process.env.LIGHTWORKER_TEST_PG_SKIP ?? 'LIGHTWORKER_TEST_PG_URL unset'}`);

/** Well under the 30 s a supervisor (systemd's default 90 s, the chaos run's 30 s) gives before SIGKILL. */
const PROMPT_MS = 20_000;

let t: ReturnType<typeof tempDir>;
let fleet: FleetHosts;
let proxy: TcpProxy;

beforeAll(async () => {
  t = tempDir('lw-sigterm-');
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(url).port) });
  fleet = makeFleetHosts(t.dir, url, { hosts: ['host-a'], portOf: (h) => (h === 'host-a' ? proxy.port : undefined) });
});

afterAll(async () => {
  await fleet?.close();
  await proxy?.close();
  t?.cleanup();
});

/** SIGTERM a's runner; resolves with how long it took to exit (one still running after PROMPT_MS * 2 is killed). */
async function timeToExit(): Promise<{ ms: number; code: number | null | 'still running' }> {
  const a = fleet.runners['host-a'];
  const t0 = Date.now();
  a.kill('SIGTERM');
  const code = await Promise.race([exited(a), new Promise<'still running'>((r) => setTimeout(() => r('still running'), PROMPT_MS * 2))]);
  const ms = Date.now() - t0;
  if (code === 'still running') {
    a.kill('SIGKILL');
    await exited(a);
  }
  return { ms, code };
}

async function runnerUp(): Promise<void> {
  fleet.start('host-a');
  await until(() => fleet.runnerOf('host-a')?.state === 'active' && fleet.stderr['host-a']().includes('leading'), 30_000, () => `a to lead: ${fleet.stderr['host-a']()}`);
}

describe('a runner stops promptly on SIGTERM whatever its store does', () => {
  it('its server silent: it exits within seconds, its worker dead, and the next runner recovers its task', async () => {
    await runnerUp();
    const [id] = await fleet.submit(1, { sleep_ms: 120_000 });
    await until(() => fleet.status(id).status === 'running' && fleet.beats().some((b) => b.task === id), 30_000, () => `the task to run: ${JSON.stringify(fleet.status(id))}`);
    const worker = fleet.beats().find((b) => b.task === id)!.pid;
    proxy.blackhole();
    let took: Awaited<ReturnType<typeof timeToExit>>;
    try {
      // Its event loop is blocked in a store call by now (a beat every ttl/4).
      await new Promise((r) => setTimeout(r, 1000));
      took = await timeToExit();
    } finally {
      await proxy.restore();
    }
    expect(took.code, fleet.stderr['host-a']()).not.toBe('still running');
    expect(took.ms, fleet.stderr['host-a']()).toBeLessThan(PROMPT_MS);
    expect(isAlive(worker)).toBe(false);
    // What it could not write, the next runner of the host finds and recovers.
    await runnerUp();
    await until(() => fleet.status(id).status !== 'running' || fleet.status(id).attempt > 1, 30_000, () => `the task to be recovered: ${JSON.stringify(fleet.status(id))}`);
    expect(['orphaned', 'cancelled']).toContain(fleet.status(id).status);
  }, 180_000);

  it('its query lost by the network, which is back: it exits within seconds (no wait for an answer that never comes)', async () => {
    const a = fleet.runners['host-a'];
    if (a.exitCode !== null || a.signalCode !== null) await runnerUp();
    proxy.blackhole();
    // A beat is sent into the black hole and lost (the proxy forwards nothing), then the network is back.
    await new Promise((r) => setTimeout(r, 1000));
    await proxy.restore();
    await new Promise((r) => setTimeout(r, 500));
    const took = await timeToExit();
    expect(took.code, fleet.stderr['host-a']()).not.toBe('still running');
    expect(took.ms, fleet.stderr['host-a']()).toBeLessThan(PROMPT_MS);
  }, 180_000);
});
