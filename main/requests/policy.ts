import { isAbsolute, relative, resolve } from 'node:path';
import type { Config } from '../core/config.js';
import { matchAny } from '../platform/git/globs.js';
import type { RequestKind } from '../store/requests.js';
import type { Task } from '../tasks/types.js';

/** What a worker asked for, as the policy sees it. */
export interface AskedFor {
  /** A budget request is LightWorker's own, never a worker's ask. */
  kind: Exclude<RequestKind, 'budget'>;
  /** Permission requests: the tool and its input. */
  tool?: string | null;
  command?: string | null;
  /** A file the tool would write, when it names one. */
  path?: string | null;
}

export interface PolicyDecision {
  decision: 'ask' | 'deny';
  reason: string;
}

const FILE_WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);
/** Outside every task's boundary whatever a person says (SPEC: LightWorker never pushes, merges or publishes). */
const NEVER = /\bgit\s+(push|merge|rebase|reset\s+--hard)\b|\b(npm|pnpm|yarn)\s+publish\b|\bgh\s+(pr\s+merge|release)\b/;

/**
 * Decide whether a worker's request goes to a person (`ask`) or is denied at once (`deny`). Nothing is
 * ever granted automatically. Denied at once: anything outside the task's boundary — file writes by a
 * read-only kind, outside the worktree or outside allowed_paths; pushing, merging or publishing — and
 * what config.toml [requests] says to deny for this kind or profile (profile wins over kind, kind over
 * the global setting). `workdir` is where the worker runs (the worktree for execute tasks).
 */
export function decideRequest(config: Config, task: Pick<Task, 'kind' | 'profile' | 'allowedPaths'>, workdir: string, asked: AskedFor): PolicyDecision {
  if (asked.kind === 'permission') {
    const boundary = boundaryProblem(task, workdir, asked);
    if (boundary) return { decision: 'deny', reason: `outside the task's boundary: ${boundary}` };
  }
  const rules = config.requests;
  const byProfile = task.profile ? rules.profiles[task.profile]?.[asked.kind] : undefined;
  const byKind = rules.kinds[task.kind]?.[asked.kind];
  const rule = byProfile ?? byKind ?? rules[asked.kind];
  const where = byProfile ? `requests.profiles.${task.profile}` : byKind ? `requests.kinds.${task.kind}` : 'requests';
  return rule === 'deny' ? { decision: 'deny', reason: `config.toml [${where}] ${asked.kind} = "deny"` } : { decision: 'ask', reason: `config.toml [${where}] ${asked.kind} = "ask"` };
}

function boundaryProblem(task: Pick<Task, 'kind' | 'allowedPaths'>, workdir: string, asked: AskedFor): string | null {
  if (asked.command && NEVER.test(asked.command)) return 'LightWorker never pushes, merges or publishes from a task';
  const writes = asked.path ?? null;
  if (!writes && !(asked.tool && FILE_WRITE_TOOLS.has(asked.tool))) return null;
  if (task.kind !== 'execute') return `a ${task.kind} task is read-only`;
  if (!writes) return null;
  const full = isAbsolute(writes) ? writes : resolve(workdir, writes);
  const rel = relative(workdir, full);
  if (rel.startsWith('..') || isAbsolute(rel)) return `${writes} is outside the worktree`;
  if (task.allowedPaths.length && !matchAny(rel, task.allowedPaths)) return `${rel} is outside allowed_paths`;
  return null;
}
