import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { inspectChanges, prepareWorkspace } from '../../main/isolation/workspace.js';
import { listEvents } from '../../main/store/events.js';
import { requireTask } from '../../main/store/tasks.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { git, newExecuteTask, simulateRun } from './isolation.helpers.js';

let h: TestHome;
afterEach(() => h?.cleanup());

describe('inspectChanges boundary check', () => {
  it('reports a write into the source checkout and the task fails', async () => {
    h = makeHome();
    writeFileSync(join(h.repo, 'dirty-before.txt'), 'the user was already editing this\n');
    const t = await newExecuteTask(h);
    const run = await simulateRun(h, t, (dir) => {
      writeFileSync(join(dir, 'ok.txt'), 'inside the worktree\n');
      writeFileSync(join(h.repo, 'README.md'), 'written outside the worktree\n');
    });
    expect(run.changes.ok).toBe(false);
    expect(run.changes.violations).toEqual([`${join(h.repo, 'README.md')} (written in the source checkout)`]);
    expect(run.task.status).toBe('failed');
    const ev = listEvents(h.engine.db, { taskId: t.id, types: ['changes.inspected'] }).events[0];
    expect(ev.payload.violations).toEqual(run.changes.violations);
  });

  it('reports a commit made in the source checkout (HEAD moved)', async () => {
    h = makeHome();
    const t = await newExecuteTask(h);
    const run = await simulateRun(h, t, () => {
      writeFileSync(join(h.repo, 'sneaky.txt'), 'x\n');
      git(h.repo, 'add', 'sneaky.txt');
      git(h.repo, 'commit', '-qm', 'sneaky');
    });
    expect(run.changes.ok).toBe(false);
    expect(run.changes.violations.join('\n')).toMatch(/HEAD \(moved from/);
  });

  it("reports a hook planted in the source repository's git dir and a worktree that left its branch", async () => {
    h = makeHome();
    const t = await newExecuteTask(h);
    const run = await simulateRun(h, t, (dir) => {
      writeFileSync(join(h.repo, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\ncurl evil\n', { mode: 0o755 });
      git(dir, 'checkout', '-q', '-b', 'elsewhere');
      writeFileSync(join(dir, 'x.txt'), 'x\n');
    });
    const v = run.changes.violations.join('\n');
    expect(v).toContain(`${join(h.repo, '.git', 'hooks', 'pre-commit')} (written in the source checkout)`);
    expect(v).toMatch(/HEAD left the task branch lightworker\/[0-9A-Z]{26}: now refs\/heads\/elsewhere/);
  });

  it('reports a symlink that escapes the worktree', async () => {
    h = makeHome();
    const t = await newExecuteTask(h);
    const run = await simulateRun(h, t, (dir) => {
      symlinkSync('/etc/passwd', join(dir, 'passwd-link'));
      symlinkSync('../../../../../../../../tmp', join(dir, 'up-link'));
      symlinkSync('README.md', join(dir, 'fine-link'));
    });
    expect(run.changes.ok).toBe(false);
    const v = run.changes.violations.join('\n');
    expect(v).toMatch(/passwd-link \(symlink resolving outside the worktree to \/etc\/passwd\)/);
    expect(v).toMatch(/up-link \(symlink resolving outside/);
    expect(v).not.toMatch(/fine-link/);
  });

  it('reports paths outside allowed_paths', async () => {
    h = makeHome();
    const t = await newExecuteTask(h, { allowed_paths: ['src/**', 'docs/*.md'] });
    const run = await simulateRun(h, t, (dir) => {
      git(dir, 'rm', '-q', 'README.md');
      for (const [p, body] of Object.entries({ 'src/a/b.ts': 'ok', 'docs/x.md': 'ok', 'docs/deep/y.md': 'no', 'package.json': '{}' })) {
        mkdirSync(join(dir, p, '..'), { recursive: true });
        writeFileSync(join(dir, p), body);
      }
    });
    expect(run.changes.violations.sort()).toEqual([
      'README.md (outside allowed_paths)',
      'docs/deep/y.md (outside allowed_paths)',
      'package.json (outside allowed_paths)',
    ]);
    expect(run.changes.changedFiles).toContain('src/a/b.ts');
  });

  it('flags an empty diff and records a diff artifact for real changes', async () => {
    h = makeHome();
    const empty = await simulateRun(h, await newExecuteTask(h), () => {});
    expect(empty.changes).toMatchObject({ ok: true, empty: true, changedFiles: [] });
    const real = await simulateRun(h, await newExecuteTask(h), (dir) => writeFileSync(join(dir, 'x.txt'), 'hello\n'));
    expect(real.changes.diffArtifact).toMatch(/artifacts\/[0-9A-Z]{26}\/diff-1\.patch$/);
    expect(readFileSync(real.changes.diffArtifact!, 'utf8')).toContain('+hello');
    const d = await h.call('get_task_diff', { id: real.task.id });
    expect(d).toMatchObject({ files: ['x.txt'], truncated: false, source: 'branch' });
    expect(d.diff).toContain('+hello');
    // the worker's change is committed on the task branch by LightWorker, authored by the repository's user
    expect(git(real.ws.workdir, 'log', '-1', '--format=%an / %cn', `lightworker/${real.task.id}`)).toBe('Test / LightWorker');
  });

  it('caps a large diff with a note', async () => {
    h = makeHome();
    const run = await simulateRun(h, await newExecuteTask(h), (dir) =>
      writeFileSync(join(dir, 'big.txt'), 'line of text\n'.repeat(30_000)),
    );
    const d = await h.call('get_task_diff', { id: run.task.id, max_bytes: 4096 });
    expect(d.truncated).toBe(true);
    expect(Buffer.byteLength(d.diff)).toBeLessThanOrEqual(4096);
    expect(d.note).toMatch(/truncated/);
  });

  it('read-only tasks of a worker with an enforced read-only sandbox run in the workspace and writes there are violations', async () => {
    h = makeHome();
    const { task } = await h.call('delegate_task', { objective: 'look around', kind: 'explore', workspace: h.repo });
    const ws = await prepareWorkspace(h.engine, requireTask(h.engine.db, task.id), undefined, { readOnlyInPlace: true });
    expect(ws.workdir).toBe(h.repo);
    expect(ws.env).toEqual({});
    const clean = await inspectChanges(h.engine, requireTask(h.engine.db, task.id), ws);
    expect(clean.ok).toBe(true);
    writeFileSync(join(h.repo, 'explorer-wrote.txt'), 'oops\n');
    const dirty = await inspectChanges(h.engine, requireTask(h.engine.db, task.id), ws);
    expect(dirty.ok).toBe(false);
    expect(dirty.violations[0]).toContain('explorer-wrote.txt');
  });
});
