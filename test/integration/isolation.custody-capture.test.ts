import { execFileSync } from 'node:child_process';
import { chmodSync, linkSync, lstatSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { captureGitFiles, type FileEntry } from '../../main/isolation/custody-capture.js';
import { tempDir } from '../helpers/env.js';
import { until } from '../helpers/procs.js';

/**
 * The after-task check takes a guarded file's bytes from the capture before the task when its stat
 * signature (device, inode, mode, size, mtime and ctime to the nanosecond) is the one recorded then. A
 * worker that rewrites a hook at the same size and puts its times back, replaces it by a hard link or a
 * rename of a same-size file, or swaps in a symlink, must still be seen: each of those leaves a new ctime.
 */
let dirs: { cleanup(): void }[] = [];
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

function repo(): { git: string; hook: string } {
  const d = tempDir('lw-capture-');
  dirs.push(d);
  execFileSync('git', ['init', '-q', d.dir]);
  const hook = join(d.dir, '.git', 'hooks', 'pre-push');
  writeFileSync(hook, '#!/bin/sh\nexit 0\n');
  chmodSync(hook, 0o755);
  return { git: join(d.dir, '.git'), hook };
}

/** Until the file system's clock has moved past `path`'s ctime: a write from now on gets a later one. */
async function clockPast(dir: string, path: string): Promise<void> {
  const was = lstatSync(path, { bigint: true }).ctimeNs;
  const probe = join(dir, 'clock-probe');
  await until(() => {
    writeFileSync(probe, 'x');
    return lstatSync(probe, { bigint: true }).ctimeNs > was;
  }, 5000, 'the file system clock to move past the file');
  rmSync(probe);
}

const bytesOf = (e: FileEntry | undefined) => (e && 'bytes' in e ? e.bytes.toString('utf8') : e && 'link' in e ? `-> ${e.link}` : null);

describe('custody capture: unchanged guarded files are not read again, changed ones always are', () => {
  it('an untouched file keeps the bytes read before; a fresh ctime (not settled yet) is read again', () => {
    const { git, hook } = repo();
    const before = captureGitFiles(git, git, undefined, 0n);
    expect(before.signatures.has(hook)).toBe(true);
    const after = captureGitFiles(git, git, before, 0n);
    // The same Buffer: taken over, not read.
    expect(after.files.get(hook)).toBe(before.files.get(hook));
    // With the real margin a file written a moment ago is not vouched for by its stat.
    const fresh = captureGitFiles(git, git);
    expect(fresh.signatures.has(hook)).toBe(false);
    expect(captureGitFiles(git, git, fresh).files.get(hook)).not.toBe(fresh.files.get(hook));
  });

  const rewrites: [string, (hook: string, dir: string) => void][] = [
    ['rewritten in place at the same size, mode and times (to the nanosecond)', (hook, dir) => {
      const ref = join(dir, 'times-ref');
      execFileSync('touch', ['-r', hook, ref]);
      writeFileSync(hook, '#!/bin/sh\nrm -rf\n');
      execFileSync('touch', ['-r', ref, hook]);
    }],
    ['replaced by a rename of a same-size file with the same times', (hook, dir) => {
      const other = join(dir, 'evil');
      writeFileSync(other, '#!/bin/sh\ncurl x\n', { mode: 0o755 });
      chmodSync(other, 0o755);
      execFileSync('touch', ['-r', hook, other]);
      renameSync(other, hook);
    }],
    ['replaced by a hard link to another file', (hook, dir) => {
      const other = join(dir, 'evil-link');
      writeFileSync(other, '#!/bin/sh\nexit 1\n', { mode: 0o755 });
      rmSync(hook);
      linkSync(other, hook);
    }],
    ['replaced by a symlink', (hook) => {
      rmSync(hook);
      symlinkSync('/tmp/lightworker-evil-hook', hook);
    }],
    ['made not executable', (hook) => chmodSync(hook, 0o644)],
  ];
  for (const [what, change] of rewrites) {
    it(`a hook ${what} is read again and differs`, async () => {
      const { git, hook } = repo();
      const before = captureGitFiles(git, git, undefined, 0n);
      await clockPast(git, hook);
      change(hook, git);
      const after = captureGitFiles(git, git, before, 0n).files.get(hook);
      expect(after).not.toBe(before.files.get(hook));
      const was = before.files.get(hook)!;
      const now = after!;
      const same = bytesOf(was) === bytesOf(now) && 'mode' in was && 'mode' in now && was.mode === now.mode;
      expect(same, `${bytesOf(was)} → ${bytesOf(now)}`).toBe(false);
    });
  }

  it('a config include added by the task is followed, and the included file read', async () => {
    const { git } = repo();
    const before = captureGitFiles(git, git, undefined, 0n);
    const config = join(git, 'config');
    await clockPast(git, config);
    writeFileSync(join(git, 'evil.inc'), '[core]\n\thooksPath = /tmp/evil\n');
    writeFileSync(config, `${readFileSync(config, 'utf8')}[include]\n\tpath = evil.inc\n`);
    const after = captureGitFiles(git, git, before, 0n);
    expect(bytesOf(after.files.get(join(git, 'evil.inc')))).toContain('hooksPath');
    expect(bytesOf(after.files.get(config))).toContain('evil.inc');
  });
});
