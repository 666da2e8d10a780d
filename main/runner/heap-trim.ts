import { getHeapStatistics } from 'node:v8';

/**
 * A leader's heap holds ~10 MiB of live data, but V8 lets garbage pile up in the old generation until a
 * limit sized for big heaps: over a 200-task drain the heap grew from 15 to 19 MiB and peak RSS with it, all
 * of it garbage (issue 13). Where the leader runs with --expose-gc (LEADER_V8_FLAGS), a task's end collects
 * once garbage worth {@link SLACK} has piled up since the last collection (a few ms, every hundred tasks or so).
 * Without the flag (a `lightworker run` typed by hand, Electron) this does nothing and V8 decides alone.
 */
const SLACK = 2 * 1024 * 1024;
let liveAfterGc = 0;

export function trimHeap(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return;
  if (getHeapStatistics().used_heap_size < liveAfterGc + SLACK) return;
  gc();
  liveAfterGc = getHeapStatistics().used_heap_size;
}
