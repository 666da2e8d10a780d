import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api } from '../api/client.js';

export interface WorkerChoice {
  name: string;
  installed: boolean;
  reason: string | null;
  /** Installed and with credentials: a task of it can run here. */
  usable: boolean;
  /** Why it cannot run, in two words, and what fixes it (null when usable). */
  why: string | null;
  fix: string | null;
}

const RECENT_KEY = 'lightworker.workspaces';

/** What the New forms offer: the workers (list_workers) and recent repositories (this browser's, then list_workspaces). */
export const usePickers = defineStore('pickers', () => {
  const workers = ref<WorkerChoice[]>([]);
  const workspaces = ref<string[]>(readRecent());
  let loaded = false;

  function readRecent(): string[] {
    try {
      const v = JSON.parse(localStorage.getItem(RECENT_KEY) ?? '[]') as unknown;
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    } catch {
      return [];
    }
  }

  async function load(): Promise<void> {
    if (loaded) return;
    loaded = true;
    const [w, s] = await Promise.allSettled([
      api().call('list_workers', {}),
      api().call('list_workspaces', { limit: 20 }),
    ]);
    if (w.status === 'fulfilled') workers.value = w.value.workers.map((x) => ({
        name: x.name,
        installed: x.installed,
        reason: x.reason,
        usable: x.usable,
        why: x.usable ? null : x.installed ? 'no credentials' : 'not installed',
        fix: x.fix,
      }));
    if (s.status === 'fulfilled') workspaces.value = [...new Set([...readRecent(), ...s.value.workspaces.map((x) => x.workspace)])];
  }

  /** Remember a repository the user submitted to (most recent first, 10 kept). */
  function remember(path: string): void {
    const next = [path, ...readRecent().filter((p) => p !== path)].slice(0, 10);
    localStorage.setItem(RECENT_KEY, JSON.stringify(next));
    workspaces.value = [...new Set([path, ...workspaces.value])];
  }

  return { workers, workspaces, load, remember };
});
