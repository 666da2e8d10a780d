import { realpathSync, statfsSync } from 'node:fs';
import { relative, isAbsolute } from 'node:path';
import { AppError } from '../../core/errors.js';
import type { Config } from '../../core/config.js';

const GIB = 1024 ** 3;

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** True when `child` is `parent` or below it (after resolving symlinks). */
export function isInside(child: string, parent: string): boolean {
  const rel = relative(real(parent), real(child));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The home and the repository must not contain each other: a worktree inside the repository would show
 * up in its `git status` (and be committed by `git add -A`), and a repository inside the home could be
 * deleted by prune.
 */
export function checkContainment(homeRoot: string, repo: string): void {
  if (isInside(repo, homeRoot)) {
    throw new AppError('invalid_input', `workspace: repository ${repo} is inside the LightWorker home ${homeRoot}; move one of them`, {
      field: 'workspace',
    });
  }
  if (isInside(homeRoot, repo)) {
    throw new AppError(
      'invalid_input',
      `workspace: the LightWorker home ${homeRoot} is inside repository ${repo}; set LIGHTWORKER_HOME outside it`,
      { field: 'workspace' },
    );
  }
}

/** Bytes kept free on the worktrees' filesystem: config.worktrees.disk_reserve_bytes, else max(2 GiB, 5 %). */
export function diskReserve(config: Config, totalBytes: number): number {
  return config.worktrees.disk_reserve_bytes ?? Math.max(2 * GIB, Math.floor(totalBytes * 0.05));
}

/** Refuse (AppError 'disk_full') when allocating would eat into the disk reserve. */
export function checkDiskReserve(config: Config, dir: string): { freeBytes: number; reserveBytes: number } {
  const s = statfsSync(dir);
  const total = s.blocks * s.bsize;
  const free = s.bavail * s.bsize;
  const reserve = diskReserve(config, total);
  if (free < reserve) {
    const gib = (n: number) => `${(n / GIB).toFixed(2)} GiB`;
    throw new AppError(
      'disk_full',
      `not enough disk for a new worktree in ${dir}: ${gib(free)} free, ${gib(reserve)} kept in reserve (worktrees.disk_reserve_bytes); run \`lightworker prune --apply\``,
      {
        freeBytes: free,
        reserveBytes: reserve,
      },
    );
  }
  return { freeBytes: free, reserveBytes: reserve };
}
