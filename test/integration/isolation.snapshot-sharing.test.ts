import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { findOnPath } from '../../main/workers/which.js';
import { makeHome, type TestHome } from '../helpers/env.js';

// Read-only tasks run in the user's checkout; a snapshot of it (`git status`) before and after each
// worker turn catches a worker writing there. One snapshot (fewer git calls and inodes in a 200-task drain, npm run bench) serves every task of the
// repository that asks at about the same time, instead of two `git status` per task.
const FAKE = fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));

let h: TestHome;
let savedPath: string | undefined;
afterEach(() => {
  if (savedPath !== undefined) process.env.PATH = savedPath;
  savedPath = undefined;
  h?.cleanup();
});

/** Put a `git` first on PATH that logs its arguments, then runs the real git. Returns the log path. */
function countGit(dir: string): string {
  const realGit = findOnPath('git')!;
  const bin = join(dir, 'git-counter');
  mkdirSync(bin, { recursive: true });
  const log = join(dir, 'git-calls.log');
  writeFileSync(log, '');
  writeFileSync(join(bin, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(realGit)} "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  savedPath = process.env.PATH;
  process.env.PATH = `${bin}:${process.env.PATH}`;
  return log;
}

describe('source snapshots of read-only tasks', () => {
  it('a run of read-only tasks takes about one git status per task, not two', async () => {
    h = makeHome();
    h.configure(`[scheduler]\nmax_concurrency = 1\n[workers.codex]\ncommand = [${JSON.stringify(FAKE)}]\nauth = "none"\n`);
    const n = 6;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await h.call('delegate_task', { objective: `look ${i}`, kind: 'explore', workspace: h.repo, worker: 'codex' })).task.id);
    const log = countGit(h.root);
    const svc = await startSchedulerService(h.engine);
    try {
      const r = await waitTasks(h.engine, ids, 120_000);
      expect(r.counts.completed).toBe(n);
    } finally {
      await svc.stop();
    }
    const statuses = readFileSync(log, 'utf8').split('\n').filter((l) => / status /.test(` ${l} `));
    // One before the first task, then each task's "after" serves as the next task's "before"
    // (a machine slow enough to exceed the sharing window adds one here and there).
    expect(statuses.length).toBeGreaterThanOrEqual(n);
    expect(statuses.length).toBeLessThanOrEqual(n + 2);
  });
});
