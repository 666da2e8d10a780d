import type { StoreWriter } from '../store/engine-handle.js';
import { computeMetrics, DEFAULT_TARGET, DEFAULT_WINDOW_MS, type CacheMetrics } from './metrics.js';
import { listSamples, materializeSamples } from './samples.js';

/**
 * The engine call behind `get_cache_metrics`, `lightworker cache-metrics` and the Cache Lab page:
 * bring the samples up to date with the event log (idempotent), then compute over the window.
 */
export function readCacheMetrics(engine: StoreWriter, opts: { windowMs?: number; target?: number; now?: number } = {}): CacheMetrics {
  const windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS;
  const now = opts.now ?? Date.now();
  engine.write(() => {
    while (materializeSamples(engine.db) >= 5000);
  });
  // One extra window back: earlier samples make the first ones in the window warm.
  const samples = listSamples(engine.db, now - 2 * windowMs, now);
  return computeMetrics(samples, { now, windowMs, target: opts.target ?? DEFAULT_TARGET });
}
