import { createServer } from 'node:net';
import { AppError } from '../core/errors.js';
import type { EngineContext } from '../tasks/engine-context.js';
import type { Db } from '../store/db.js';
import { deletePortBlock, insertPortBlock, portBlockOf, reclaimDeadPortBlocks, takenPortBases, type PortBlock } from '../store/port-blocks.js';

/** Ports per live worktree, exported as LIGHTWORKER_PORT … LIGHTWORKER_PORT + 9. */
export const PORT_BLOCK_SIZE = 10;
/** Below the Linux ephemeral range (32768+) and the Windows/macOS one (49152+). */
export const PORT_RANGE = { first: 21_000, last: 30_999 } as const;

export type { PortBlock } from '../store/port-blocks.js';

/** Reserve the lowest free block for `taskId` in the caller's transaction (idempotent per task). */
export function reserveBlock(db: Db, taskId: string, skip: ReadonlySet<number> = new Set()): PortBlock {
  const existing = portBlockOf(db, taskId);
  if (existing && !skip.has(existing.base)) return existing;
  if (existing) deletePortBlock(db, taskId);
  reclaimDeadPortBlocks(db);
  const taken = takenPortBases(db);
  for (let base = PORT_RANGE.first; base + PORT_BLOCK_SIZE - 1 <= PORT_RANGE.last; base += PORT_BLOCK_SIZE) {
    if (taken.has(base) || skip.has(base)) continue;
    insertPortBlock(db, taskId, { base, size: PORT_BLOCK_SIZE }, Date.now());
    return { base, size: PORT_BLOCK_SIZE };
  }
  throw new AppError('unavailable', `no free port block left in ${PORT_RANGE.first}-${PORT_RANGE.last}; prune ended worktrees`);
}

export function releaseBlock(db: Db, taskId: string): void {
  deletePortBlock(db, taskId);
}

export function blockOf(db: Db, taskId: string): PortBlock | null {
  return portBlockOf(db, taskId);
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
