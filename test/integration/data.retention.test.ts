import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../main/core/config.js';
import { sweepRetention } from '../../main/scheduler/retention-sweep.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeHome, makeRepo, tempDir, withTestStore, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/procs.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.reverse()) c();
  cleanups = [];
});

describe('[retention]', () => {
  it('is off by default: a leader never deletes a tree the person did not ask to', async () => {
    const h: TestHome = makeHome();
    cleanups.push(() => h.cleanup());
    expect(loadConfig(join(h.root, 'none.toml')).retention).toMatchObject({ enabled: false, older_than: '30d', interval_s: 3600 });
    await h.call('delegate_task', { objective: 'x', workspace: h.repo });
    expect(sweepRetention(h.engine, Date.now())).toBeNull();
    expect(sweepRetention(h.engine, Date.now() + 365 * 86_400_000)).toBeNull();
  });

  it('a config with a bad older_than is refused naming the key', () => {
    const { dir, cleanup } = tempDir('lw-ret-');
    cleanups.push(cleanup);
    writeFileSync(join(dir, 'config.toml'), '[retention]\nenabled = true\nolder_than = "soon"\n');
    expect(() => loadConfig(join(dir, 'config.toml'))).toThrow(/retention\.older_than/);
  });

  it('on, the leader deletes ended trees past the age by itself, leaving tombstones audit verify accepts', async () => {
    const { dir, cleanup } = tempDir('lw-ret-');
    cleanups.push(cleanup);
    const home = join(dir, 'home');
    const repo = makeRepo(join(dir, 'repo'));
    withTestStore(home, '[retention]\nenabled = true\nolder_than = "1s"\ninterval_s = 1\n');
    for (let i = 0; i < 3; i++) expect((await runCli(['submit', '--worker', 'mock', '--kind', 'explore', '--workspace', repo, `look ${i}`], { home })).code).toBe(0);
    const leader = startCli(['run', '--quiet'], { home });
    cleanups.push(() => leader.kill('SIGKILL'));
    const tasks = async () => JSON.parse((await runCli(['tasks', '--json'], { home })).stdout).tasks as { status: string }[];
    await until(async () => (await tasks()).length === 0, 120_000, 'the leader deleted every ended tree');
    const audit = await runCli(['audit', 'verify', '--json'], { home });
    expect(audit.code, audit.stdout).toBe(0);
    expect(JSON.parse(audit.stdout)).toMatchObject({ ok: true, tombstones: { count: 3 } });
    const swept = await runCli(['events', '--json', '--limit', '5000'], { home });
    expect(swept.stdout).toContain('"retention.swept"');
  });
});
