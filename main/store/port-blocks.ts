import type { Db } from './db.js';

/** Query module for the `port_blocks` table (migration 003): the ledger of port blocks lent to live worktrees. */

export interface PortBlock {
  base: number;
  size: number;
}

/**
 * Free the blocks whose task has ended or has no live worktree. A block stays taken while its worktree is
 * allocating/ready and its task has not ended, so no two live worktrees share ports.
 */
export function reclaimDeadPortBlocks(db: Db): void {
  db.prepare(
    `DELETE FROM port_blocks WHERE task_id NOT IN (
       SELECT w.task_id FROM worktrees w JOIN tasks t ON t.id = w.task_id
       WHERE w.state IN ('allocating','ready')
         AND t.status NOT IN ('completed','accepted','failed','timed_out','cancelled','blocked','orphaned','rejected'))`,
  ).run();
}

export function portBlockOf(db: Db, taskId: string): PortBlock | null {
  return (db.prepare('SELECT base, size FROM port_blocks WHERE task_id = ?').get(taskId) as PortBlock | undefined) ?? null;
}

export function deletePortBlock(db: Db, taskId: string): void {
  db.prepare('DELETE FROM port_blocks WHERE task_id = ?').run(taskId);
}

/** The first port of every block lent out. */
export function takenPortBases(db: Db): Set<number> {
  return new Set((db.prepare('SELECT base FROM port_blocks').all() as { base: number }[]).map((r) => r.base));
}

export function insertPortBlock(db: Db, taskId: string, block: PortBlock, now = Date.now()): void {
  db.prepare('INSERT INTO port_blocks (base, size, task_id, allocated_at) VALUES (?, ?, ?, ?)').run(block.base, block.size, taskId, now);
}
