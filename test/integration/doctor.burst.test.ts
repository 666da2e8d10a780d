import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/env.js';
import { StdioChild } from './mcp.helpers.js';

// run_doctor is the expensive call of the MCP face (it asks every worker CLI its version): it must not
// hold up the cheap calls of the same server, and a burst of it must not start a process per call.

let t: ReturnType<typeof tempDir>;
let home: string;
let marks: string;
let child: StdioChild | null = null;

/** A linked agent whose version command leaves a mark per run and then hangs (a stuck update check). */
function linkSlowAgent(name: string, hang: boolean): Promise<unknown> {
  const bin = join(t.dir, `${name}-agent`);
  writeFileSync(bin, `#!/bin/sh\ntouch "${marks}/${name}.$$"\n${hang ? 'exec sleep 30' : 'echo "slow 1.0.0"'}\n`);
  chmodSync(bin, 0o755);
  return runCli(['workers', 'link', name, '--command-json', JSON.stringify([bin, 'run', '{prompt}']), '--version-json', JSON.stringify([bin, '--version'])], { home });
}

const runs = (name: string) => readdirSync(marks).filter((f) => f.startsWith(`${name}.`)).length;

beforeEach(() => {
  t = tempDir('lw-doctor-burst-');
  home = join(t.dir, 'home');
  marks = join(t.dir, 'marks');
  mkdirSync(marks);
});
afterEach(async () => {
  await child?.stop();
  child = null;
  t.cleanup();
});

describe('run_doctor under load', () => {
  it('answers cheap calls promptly while a doctor waits on a hanging probe', async () => {
    await linkSlowAgent('stuck', true);
    child = new StdioChild(home);
    await child.initialize();
    const t0 = performance.now();
    const doctor = child.callTool('run_doctor').then((r) => ({ r, ms: performance.now() - t0 }));
    const cheap = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const s = performance.now();
        const r = await child!.callTool('list_tasks', { limit: 5 });
        expect(r.result.isError).toBeFalsy();
        return performance.now() - s;
      }),
    );
    const d = await doctor;
    // The doctor waited for the hanging probe; every cheap call came back in a fraction of that time.
    expect(Math.max(...cheap)).toBeLessThan(d.ms / 4);
    const check = d.r.result.structuredContent.checks.find((c: { name: string }) => c.name === 'worker stuck');
    expect(check.detail).toMatch(/version unknown: it did not answer within/);
  }, 60_000);

  it('a burst of run_doctor calls probes each binary once (cached, shared), and later calls reuse the answer', async () => {
    await linkSlowAgent('slow', false);
    child = new StdioChild(home);
    await child.initialize();
    const burst = await Promise.all(Array.from({ length: 20 }, () => child!.callTool('run_doctor')));
    for (const r of burst) {
      expect(r.result.structuredContent.checks.find((c: { name: string }) => c.name === 'worker slow').detail).toMatch(/^slow 1\.0\.0/);
    }
    expect(runs('slow')).toBe(1);
    const listed = await child.callTool('list_workers');
    expect(listed.result.structuredContent.workers.find((w: { name: string }) => w.name === 'slow').version).toBe('slow 1.0.0');
    expect(runs('slow')).toBe(1);
  }, 60_000);
});
