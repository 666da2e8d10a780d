import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api, isUnknownCommand } from '../api/client.js';
import { readCacheMetrics, type CacheMetrics, type CacheView } from './cache-metrics.js';
import { useLive } from './live.js';
import { keyedDebounce } from './refresh.js';

/** Cache Lab: hit rates overall, per cohort and over time, from get_cache_metrics. */
export const useCacheLab = defineStore('cache-lab', () => {
  const view = ref<CacheView | null>(null);
  const raw = ref<CacheMetrics | null>(null);
  const unavailable = ref(false);
  const error = ref<string | null>(null);
  const loading = ref(false);

  async function load(): Promise<void> {
    loading.value = true;
    try {
      const metrics = await api().call('get_cache_metrics', {});
      raw.value = metrics;
      view.value = readCacheMetrics(metrics);
      unavailable.value = false;
      error.value = null;
    } catch (err) {
      if (isUnknownCommand(err)) unavailable.value = true;
      else error.value = (err as Error).message;
    } finally {
      loading.value = false;
    }
  }
  // New usage samples arrive as worker.usage events.
  const reload = keyedDebounce(1000, () => void load());
  useLive().listen((e) => {
    if (view.value && /usage/.test(e.type)) reload('metrics');
  });
  return { view, raw, unavailable, error, loading, load };
});
