import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { api, type LiveState } from '../api/client.js';
import type { EventRow } from '../api/types.js';

type Listener = (e: EventRow) => void;

/**
 * The one live subscription (SSE or IPC). Stores register listeners here; they load a snapshot and
 * then apply events, so the console never needs a manual refresh.
 */
export const useLive = defineStore('live', () => {
  const state = ref<LiveState>('connecting');
  const lastSeq = ref(0);
  const listeners = new Set<Listener>();
  let started = false;

  function start(): void {
    if (started) return;
    started = true;
    api().subscribe(
      (e) => {
        lastSeq.value = Math.max(lastSeq.value, e.seq);
        for (const fn of listeners) fn(e);
      },
      (s) => (state.value = s),
    );
  }

  function listen(fn: Listener): () => void {
    start();
    listeners.add(fn);
    return () => listeners.delete(fn);
  }
  /** False while the server is gone (stopped, or restarted with a new token): controls that need it are disabled. */
  const reachable = computed(() => state.value !== 'offline' && state.value !== 'signed_out');
  return { state, lastSeq, reachable, start, listen };
});
