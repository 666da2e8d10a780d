/** One thing prune found: what it is, why, and whether it goes (prune.ts plans them, accepted-branches.ts adds its own). */
export interface PruneItem {
  kind: 'allocation' | 'worktree' | 'directory' | 'git-worktree' | 'branch' | 'snapshot';
  path: string | null;
  taskId: string | null;
  branch: string | null;
  reason: string;
  action: 'remove' | 'keep';
  /** Filled when applied. */
  done?: boolean;
  error?: string;
}
