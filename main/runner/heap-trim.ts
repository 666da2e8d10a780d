import { getHeapStatistics } from 'node:v8';

/**
 * A leader's heap holds ~10 MiB of live data, but V8 lets garbage pile up in the old generation until a
 * limit sized for big heaps: over a 200-task drain the heap grew from 15 to 19 MiB and peak RSS with it, all
 * of it garbage (measured in a 200-task drain, npm run bench). Where the leader runs with --expose-gc (LEADER_V8_FLAGS), a task's end collects
 * once garbage worth {@link SLACK} has piled up since the last collection. 4 MiB, not 2: at 2 a drain ran a
 * full collection every few tasks, 0.6 ms of CPU per task for 0.7 MiB less peak RSS (62.5 against 61.9 MiB;
 * without any trim: 65 MiB).
 * Without the flag (a `lightworker run` typed by hand, Electron) this does nothing and V8 decides alone.
 */
const SLACK = 4 * 1024 * 1024;
let liveAfterGc = 0;

export function trimHeap(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return;
  if (getHeapStatistics().used_heap_size < liveAfterGc + SLACK) return;
  gc();
  liveAfterGc = getHeapStatistics().used_heap_size;
}
