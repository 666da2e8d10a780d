import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

// Harm done to a home, as a user or a machine does it: a full file system, a deleted, truncated or
// overwritten lightworker.db. Shared by the store tests and the chaos run (test/chaos/damage.ts).

export interface SmallFs {
  dir: string;
  unmount: () => void;
}

/**
 * A small tmpfs at `dir` (root only): a real file system that fills up. Returns the reason instead when none
 * can be mounted here (not root, no tmpfs, a container without CAP_SYS_ADMIN).
 */
export function mountSmallFs(dir: string, sizeMb: number, mode = '0700'): SmallFs | { reason: string } {
  if (process.platform !== 'linux') return { reason: `no tmpfs on ${process.platform}` };
  if (process.getuid?.() !== 0) return { reason: 'mounting a small file system needs root' };
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=${mode}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    return { reason: `mount -t tmpfs failed: ${String((err as { stderr?: unknown }).stderr ?? (err as Error).message).trim()}` };
  }
  return {
    dir,
    unmount: () => {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      } catch {
        // already gone
      }
    },
  };
}

/** Fill the file system holding `dir` to the last byte with a ballast file; delete it to give the space back. */
export function fillDisk(dir: string): string {
  const path = join(dir, 'ballast');
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 1 << 16, 1 << 12, 512, 1]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch {
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

export function freeDisk(ballast: string): void {
  rmSync(ballast, { force: true });
}

export type Harm = 'delete' | 'truncate' | 'corrupt';

/**
 * Harm the database file under whoever has it open: delete it, truncate it to a third, or overwrite its
 * middle third with random bytes (whole pages: their b-tree headers go, which SQLite can tell).
 */
export function harmStore(db: string, harm: Harm): void {
  if (harm === 'delete') {
    rmSync(db);
    return;
  }
  const size = statSync(db).size;
  const third = Math.floor(size / 3 / 4096) * 4096;
  if (harm === 'truncate') {
    execFileSync('truncate', ['-s', String(Math.max(4096, third)), db]);
    return;
  }
  const fd = openSync(db, 'r+');
  try {
    writeSync(fd, randomBytes(Math.max(4096, third)), 0, Math.max(4096, third), Math.max(4096, third));
  } finally {
    closeSync(fd);
  }
}

/** Pids the mock worker's `append_log` recorded ("task attempt pid" lines). */
export function loggedPids(log: string): number[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => Number(l.split(' ')[2]));
}
