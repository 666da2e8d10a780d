import { spawn } from 'node:child_process';
import { existsSync, linkSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { repoLockPath, withRepoLock, type HeldLock } from '../../main/platform/git/repo-lock.js';
import { processStartTime } from '../../main/platform/proc/process.js';
import { makeRepo, tempDir } from '../helpers/env.js';

/** The owner files beside a lock (`lightworker.lock.<pid>-<start>`). */
const ownerFiles = (path: string) => readdirSync(dirname(path)).filter((n) => n.startsWith(`${basename(path)}.`) && !n.endsWith('.break'));

const RUN_TS = fileURLToPath(new URL('../../bin/run-ts.js', import.meta.url));
const HOLD = fileURLToPath(new URL('../fixtures/isolation/hold-repo-lock.ts', import.meta.url));

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

/** Start the fixture and resolve once it holds the lock. */
function holder(args: string[]): Promise<{ exited: Promise<NodeJS.Signals | number | null> }> {
  const child = spawn(process.execPath, [RUN_TS, HOLD, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<NodeJS.Signals | number | null>((r) => child.once('exit', (code, sig) => r(sig ?? code)));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => b.toString().includes('locked') && resolve({ exited }));
    child.once('exit', (code) => reject(new Error(`fixture exited early (${code})`)));
  });
}

describe('repository lock', () => {
  it('excludes another process until it releases', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const repo = makeRepo(join(t.dir, 'repo'));
    const marker = join(t.dir, 'released');
    const h = await holder([repo, 'hold', '700', marker]);
    const sawMarker = await withRepoLock(repo, 'test', async () => existsSync(marker));
    expect(sawMarker).toBe(true);
    expect(await h.exited).toBe(0);
  });

  it('breaks the lock of a holder that died', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const repo = makeRepo(join(t.dir, 'repo'));
    const h = await holder([repo, 'die']);
    expect(await h.exited).toBe('SIGKILL');
    const path = await repoLockPath(repo);
    expect(JSON.parse(readFileSync(path, 'utf8')).what).toBe('fixture');
    expect(await withRepoLock(repo, 'after crash', async () => JSON.parse(readFileSync(path, 'utf8')).pid)).toBe(process.pid);
    expect(existsSync(path)).toBe(false);
    // The dead holder's owner file went with its lock; this process's own stays until it exits.
    expect(ownerFiles(path)).toEqual([`lightworker.lock.${process.pid}-${processStartTime(process.pid)}`]);
  });

  it('takes the lock without creating a file per take, and sweeps the owner file of a process killed after it gave the lock back', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const repo = makeRepo(join(t.dir, 'repo'));
    const path = await repoLockPath(repo);
    const h = await holder([repo, 'release-then-die']);
    expect(await h.exited).toBe('SIGKILL');
    expect(existsSync(path)).toBe(false);
    expect(ownerFiles(path)).toHaveLength(1); // left by the killed process
    const inodes = new Set<number>();
    for (let i = 0; i < 3; i++) await withRepoLock(repo, 'take', async () => void inodes.add(lstatSync(path).ino));
    // The first take swept the dead process's file; every take linked this process's one owner file.
    expect(ownerFiles(path)).toEqual([`lightworker.lock.${process.pid}-${processStartTime(process.pid)}`]);
    expect(inodes.size).toBe(1);
    expect(lstatSync(join(dirname(path), ownerFiles(path)[0])).ino).toBe([...inodes][0]);
    expect(existsSync(path)).toBe(false);
    // A give-back that failed leaves the lock linked to this process's own owner file: the next take heals it.
    linkSync(join(dirname(path), ownerFiles(path)[0]), path);
    expect(await withRepoLock(repo, 'after a failed give-back', async () => 'taken', { timeoutMs: 2000 })).toBe('taken');
    expect(existsSync(path)).toBe(false);
  });

  it('names the current holder after a longer-named take, the owner file rewritten in place (never truncated)', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const repo = makeRepo(join(t.dir, 'repo'));
    const path = await repoLockPath(repo);
    await withRepoLock(repo, `a long operation name ${'x'.repeat(300)}`, async () => undefined);
    const ino = lstatSync(join(dirname(path), ownerFiles(path)[0])).ino;
    const seen = await withRepoLock(repo, 'short', async () => JSON.parse(readFileSync(path, 'utf8')) as { what: string; pid: number });
    expect(seen).toMatchObject({ what: 'short', pid: process.pid });
    expect(lstatSync(join(dirname(path), ownerFiles(path)[0])).ino).toBe(ino);
  });

  it('serializes work in one process and is re-entrant for work that passes the held lock', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const repo = makeRepo(join(t.dir, 'repo'));
    let inside = 0;
    let maxInside = 0;
    const job = () =>
      withRepoLock(repo, 'job', async (held) => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        await withRepoLock(repo, 'nested', async () => new Promise((r) => setTimeout(r, 20)), { within: held });
        inside--;
      });
    await Promise.all([job(), job(), job(), job()]);
    expect(maxInside).toBe(1);
    // A lock given back is no proof any more: nested work after it takes the lock like anyone else.
    let kept: HeldLock | null = null;
    await withRepoLock(repo, 'first', async (held) => {
      kept = held;
    });
    const other = holder([repo, 'hold', '300', join(t.dir, 'released-2')]);
    await other;
    expect(await withRepoLock(repo, 'stale proof', async () => existsSync(join(t.dir, 'released-2')), { within: kept })).toBe(true);
  });

  it('nested work that does not pass the held lock waits for it, and gives up naming the way out', async () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const repo = makeRepo(join(t.dir, 'repo'));
    const err = await withRepoLock(repo, 'outer', () => withRepoLock(repo, 'inner', async () => 'ran', { timeoutMs: 100 })).catch((e: Error) => e);
    expect(String(err)).toMatch(/held by another operation of this process.*within/);
  });
});
