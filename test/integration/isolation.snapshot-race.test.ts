import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { listTasks } from '../../main/store/tasks.js';
import { runCli } from '../helpers/cli.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';

/**
 * The first read-only tasks of a fresh home all need the repository's snapshot store at once: they must
 * share one store, none failing because another was creating it.
 */

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.reverse()) c();
  cleanups = [];
});

/** A linked worker with no read-only sandbox (so each explore task gets a snapshot) that answers at once. */
const QUICK = `console.log(JSON.stringify({ summary: 'looked', findings: [] }));\n`;

function freshHome(): { home: string; repo: string } {
  const t = tempDir();
  cleanups.push(t.cleanup);
  const home = join(t.dir, 'home');
  writeFileSync(join(t.dir, 'quick.mjs'), QUICK);
  withTestStore(
    home,
    [
      '[scheduler]',
      'max_concurrency = 8',
      'per_repository = 8',
      'per_root = 8',
      '[workers.quick]',
      `command = ${JSON.stringify([process.execPath, join(t.dir, 'quick.mjs'), '{prompt}'])}`,
      'max_concurrency = 8',
      '',
    ].join('\n'),
  );
  // The repository's core.* settings are copied into a new store: give it some, as real repositories have.
  const repo = makeRepo(join(t.dir, 'repo'), { 'README.md': '# test repo\n', 'src/a.ts': 'export const a = 1;\n' });
  writeFileSync(join(repo, 'notes.txt'), 'uncommitted\n');
  return { home, repo };
}

async function submitMany(home: string, repo: string, n: number): Promise<void> {
  const engine = new Engine({ home });
  try {
    const { runCommand } = await import('../../main/commands/table.js');
    const { COMMANDS } = await import('../../main/commands/index.js');
    const ctx = { engine, face: 'cli' as const, depth: 0 };
    for (let i = 0; i < n; i++) {
      await runCommand(COMMANDS, ctx, 'delegate_task', { objective: `look ${i}`, kind: 'explore', workspace: repo, worker: 'quick' });
    }
  } finally {
    engine.close();
  }
}

function outcomes(home: string): { status: string; error: string | null }[] {
  const engine = new Engine({ home });
  try {
    return listTasks(engine.db, { limit: 100 }).map((t) => ({ status: t.status, error: t.error ? JSON.stringify(t.error) : null }));
  } finally {
    engine.close();
  }
}

describe('snapshot store of a fresh home', () => {
  it('20 explore tasks at once on a fresh home, run by two runners: every one completes', async () => {
    const { home, repo } = freshHome();
    await submitMany(home, repo, 20);
    const runs = await Promise.all([
      runCli(['run', '--until-idle', '--timeout', '150'], { home, cwd: repo, timeoutMs: 180_000 }),
      runCli(['run', '--until-idle', '--timeout', '150'], { home, cwd: repo, timeoutMs: 180_000 }),
    ]);
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const done = outcomes(home);
    expect(done).toHaveLength(20);
    expect(done.filter((t) => t.status !== 'completed')).toEqual([]);
    // One store, complete: the repository's core settings copied in, no scratch folder left beside it.
    const [key] = readdirSync(join(home, 'snapshots'));
    const beside = readdirSync(join(home, 'snapshots', key));
    expect(beside.filter((e) => e.startsWith('store.git'))).toEqual(['store.git']);
    expect(readFileSync(join(home, 'snapshots', key, 'store.git', 'config'), 'utf8')).toMatch(/filemode = /);
  }, 240_000);
});
