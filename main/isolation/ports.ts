import { createServer } from 'node:net';
import { AppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import type { Db } from '../store/db.js';

/** Ports per live worktree, exported as LIGHTWORKER_PORT … LIGHTWORKER_PORT + 9. */
export const PORT_BLOCK_SIZE = 10;
/** Below the Linux ephemeral range (32768+) and the Windows/macOS one (49152+). */
export const PORT_RANGE = { first: 21_000, last: 30_999 } as const;

export interface PortBlock {
  base: number;
  size: number;
}

/**
 * Blocks whose task has ended or has no live worktree are free again. A block stays taken while its
 * worktree is allocating/ready and its task has not ended, so no two live worktrees share ports.
 */
function reclaimDeadBlocks(db: Db): void {
  db.prepare(
    `DELETE FROM port_blocks WHERE task_id NOT IN (
       SELECT w.task_id FROM worktrees w JOIN tasks t ON t.id = w.task_id
       WHERE w.state IN ('allocating','ready')
         AND t.status NOT IN ('completed','accepted','failed','timed_out','cancelled','blocked','orphaned','rejected'))`,
  ).run();
}

/** Reserve the lowest free block for `taskId` in the caller's transaction (idempotent per task). */
export function reserveBlock(db: Db, taskId: string, skip: ReadonlySet<number> = new Set()): PortBlock {
  const existing = db.prepare('SELECT base, size FROM port_blocks WHERE task_id = ?').get(taskId) as PortBlock | undefined;
  if (existing && !skip.has(existing.base)) return existing;
  if (existing) db.prepare('DELETE FROM port_blocks WHERE task_id = ?').run(taskId);
  reclaimDeadBlocks(db);
  const taken = new Set((db.prepare('SELECT base FROM port_blocks').all() as { base: number }[]).map((r) => r.base));
  for (let base = PORT_RANGE.first; base + PORT_BLOCK_SIZE - 1 <= PORT_RANGE.last; base += PORT_BLOCK_SIZE) {
    if (taken.has(base) || skip.has(base)) continue;
    db.prepare('INSERT INTO port_blocks (base, size, task_id, allocated_at) VALUES (?, ?, ?, ?)').run(
      base,
      PORT_BLOCK_SIZE,
      taskId,
      Date.now(),
    );
    return { base, size: PORT_BLOCK_SIZE };
  }
  throw new AppError('unavailable', `no free port block left in ${PORT_RANGE.first}-${PORT_RANGE.last}; prune ended worktrees`);
}

export function releaseBlock(db: Db, taskId: string): void {
  db.prepare('DELETE FROM port_blocks WHERE task_id = ?').run(taskId);
}

export function blockOf(db: Db, taskId: string): PortBlock | null {
  return (db.prepare('SELECT base, size FROM port_blocks WHERE task_id = ?').get(taskId) as PortBlock | undefined) ?? null;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * Reserve a block in the ledger whose ports are also free on this machine right now (something outside
 * LightWorker may hold one). Tries up to 20 blocks.
 */
export async function allocatePorts(engine: EngineContext, taskId: string): Promise<PortBlock> {
  const skip = new Set<number>();
  for (let i = 0; i < 20; i++) {
    const block = engine.write(() => reserveBlock(engine.db, taskId, skip));
    const free = await Promise.all(Array.from({ length: block.size }, (_, k) => portFree(block.base + k)));
    if (free.every(Boolean)) return block;
    skip.add(block.base);
  }
  // Everything probed busy: keep the ledger's pick; the setup/worker will report the clash itself.
  return engine.write(() => reserveBlock(engine.db, taskId));
}

export function portEnv(block: PortBlock): Record<string, string> {
  return { LIGHTWORKER_PORT: String(block.base), LIGHTWORKER_PORT_COUNT: String(block.size) };
}
