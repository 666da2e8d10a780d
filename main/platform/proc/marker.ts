import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';

/**
 * The marker: every worker/setup/verify process gets LIGHTWORKER_TASK_ID, LIGHTWORKER_ATTEMPT and
 * LIGHTWORKER_HOME_ID in its environment and passes them on to whatever it starts, even a process
 * that left the group (setsid, double fork) and was re-parented to init. Only a process whose initial
 * environment carries all three exactly is swept: a task id alone could repeat in a copied home, and
 * the attempt keeps a retry's processes safe from the sweep of the attempt before it.
 */

/** The environment variables that mark a process as belonging to one attempt of one task. */
export const MARKER_KEYS = ['LIGHTWORKER_TASK_ID', 'LIGHTWORKER_ATTEMPT', 'LIGHTWORKER_HOME_ID'] as const;

/**
 * The marker of a task attempt run from the home at `homeRoot`. The home is hashed (its path is not
 * the workers' business) after resolving symlinks, so every process of that home computes the same id.
 */
export function treeMarkerEnv(homeRoot: string, taskId: string, attempt: number): Record<string, string> {
  let home = homeRoot;
  try {
    home = realpathSync.native(homeRoot);
  } catch {
    // not created yet: the path as given
  }
  return {
    LIGHTWORKER_TASK_ID: taskId,
    LIGHTWORKER_ATTEMPT: String(attempt),
    LIGHTWORKER_HOME_ID: createHash('sha256').update(home).digest('hex').slice(0, 16),
  };
}

/** The marker carried by `env`, or null when it does not carry a complete one. */
export function markerOf(env: Record<string, string>): Record<string, string> | null {
  const m: Record<string, string> = {};
  for (const k of MARKER_KEYS) {
    if (!env[k]) return null;
    m[k] = env[k];
  }
  return m;
}

/**
 * `env` without a tree marker: for LightWorker's own long-lived processes started from inside a task
 * (the background runner of an MCP session an agent launched), which serve the whole home and must not
 * be swept as part of that task once it re-parented to init.
 */
export function withoutTreeMarker(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of MARKER_KEYS) delete out[k];
  return out;
}
