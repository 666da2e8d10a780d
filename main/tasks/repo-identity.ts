import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import { setOrigin } from '../store/task-moves.js';

/**
 * A repository's identity across the hosts of a fleet: tasks name their repository by it, and
 * each runner maps it to its own clone (scheduler/fleet.ts).
 */

/** This host's id in a fleet: LIGHTWORKER_HOST_ID, else `[fleet] host_id`, else the machine's hostname. */
export function hostId(config: Config, env: NodeJS.ProcessEnv = process.env): string {
  return env.LIGHTWORKER_HOST_ID || config.fleet.host_id || hostname();
}

/** `git@github.com:acme/api.git`, `https://user@github.com/acme/api` → `github.com/acme/api`. */
export function normalizeRemote(url: string): string | null {
  const u = url.trim();
  if (!u) return null;
  const scp = /^[^/@:]+@([^:/]+):(.+)$/.exec(u);
  let host: string;
  let path: string;
  if (scp) {
    host = scp[1];
    path = scp[2];
  } else {
    try {
      const parsed = new URL(u);
      if (parsed.protocol === 'file:') return null;
      host = parsed.hostname;
      path = parsed.pathname;
    } catch {
      return null;
    }
  }
  path = path.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '');
  return path ? `${host.toLowerCase()}/${path}` : null;
}

const remoteCache = new Map<string, string | null>();

/** The repository's `origin` remote as an identity, or null (no remote, not a repository). Cached per path. */
export function remoteIdentity(path: string): string | null {
  const hit = remoteCache.get(path);
  if (hit !== undefined) return hit;
  let id: string | null = null;
  try {
    id = normalizeRemote(execFileSync('git', ['config', '--get', 'remote.origin.url'], { cwd: path, stdio: ['ignore', 'pipe', 'ignore'], encoding: 'utf8', timeout: 5000 }));
  } catch {
    id = null;
  }
  remoteCache.set(path, id);
  return id;
}

export function canonicalPath(path: string): string {
  const abs = resolve(path);
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

/**
 * A workspace's stable identity across hosts: the `[fleet] repos` name it is configured under, else its
 * normalized origin remote, else null (then only runners on the host it was submitted on can run it).
 */
export function repoIdentity(config: Config, workspace: string): string | null {
  const abs = canonicalPath(workspace);
  for (const [name, path] of Object.entries(config.fleet.repos)) if (canonicalPath(path) === abs) return name;
  return remoteIdentity(abs);
}

/** Stamp new tasks with their repository identity and submitting host (PostgreSQL store only). */
export function stampOrigin(db: Db, config: Config, ids: { id: string; workspace: string }[]): void {
  const host = hostId(config);
  for (const t of ids) setOrigin(db, t.id, repoIdentity(config, t.workspace), host);
}

