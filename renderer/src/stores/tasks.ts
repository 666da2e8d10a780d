import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { api, ApiError } from '../api/client.js';
import { isFullTask, type TaskStatus, type TaskView } from '../api/types.js';
import { useLive } from './live.js';
import { keyedDebounce } from './refresh.js';

function matches(t: TaskView, statuses: TaskStatus[], search: string, workspace: string): boolean {
  if (statuses.length && !statuses.includes(t.status)) return false;
  if (workspace && t.workspace !== workspace) return false;
  if (!search) return true;
  const q = search.toLowerCase();
  return t.id.toLowerCase().includes(q) || t.name.toLowerCase().includes(q) || t.objective.toLowerCase().includes(q);
}

/** The task list: a snapshot from list_tasks, then kept current from live events. */
export const useTasks = defineStore('tasks', () => {
  const byId = ref(new Map<string, TaskView>());
  const statuses = ref<TaskStatus[]>([]);
  const search = ref('');
  /** Only tasks of this repository ('' = every one). */
  const workspace = ref('');
  /** Repositories tasks ran in, most recent first (list_workspaces), for the filter. */
  const workspaces = ref<string[]>([]);
  const loading = ref(false);
  const error = ref<string | null>(null);
  const selected = ref(0);

  const list = computed(() =>
    [...byId.value.values()].filter((t) => matches(t, statuses.value, search.value, workspace.value)).sort((a, b) => (a.id < b.id ? 1 : -1)),
  );
  const counts = computed(() => {
    const c: Partial<Record<TaskStatus, number>> = {};
    for (const t of byId.value.values()) c[t.status] = (c[t.status] ?? 0) + 1;
    return c;
  });

  /** `unfiltered`: every task (the board), not only those the list's status and search ask for. */
  async function load(opts: { unfiltered?: boolean } = {}): Promise<void> {
    loading.value = true;
    error.value = null;
    const filtered = !opts.unfiltered;
    try {
      const r = await api().call('list_tasks', {
        limit: 500,
        detail: true,
        ...(filtered && statuses.value.length ? { status: statuses.value } : {}),
        ...(filtered && search.value ? { search: search.value } : {}),
      });
      byId.value = new Map(r.tasks.filter(isFullTask).map((t) => [t.id, t]));
      void loadWorkspaces();
    } catch (err) {
      error.value = (err as Error).message;
    } finally {
      loading.value = false;
    }
  }

  async function loadWorkspaces(): Promise<void> {
    try {
      const r = await api().call('list_workspaces', {});
      workspaces.value = r.workspaces.map((w) => w.workspace);
    } catch {
      workspaces.value = [...new Set([...byId.value.values()].map((t) => t.workspace))];
    }
  }

  const refetch = keyedDebounce(60, async (id) => {
    try {
      const r = await api().call('get_task', { id });
      const next = new Map(byId.value);
      next.set(id, r.task);
      byId.value = next;
      if (!workspaces.value.includes(r.task.workspace)) workspaces.value = [r.task.workspace, ...workspaces.value];
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_found') {
        const next = new Map(byId.value);
        next.delete(id);
        byId.value = next;
      }
    }
  });

  useLive().listen((e) => {
    if (!e.taskId || !e.type.startsWith('task.') && !e.type.startsWith('worker.') && !e.type.startsWith('verify')) return;
    const t = byId.value.get(e.taskId);
    if (t && e.type === 'task.status' && typeof e.payload.to === 'string') {
      // Show the new state at once; the refetch fills in result, error and usage.
      const next = new Map(byId.value);
      next.set(t.id, { ...t, status: e.payload.to as TaskStatus });
      byId.value = next;
    }
    if (t || e.type === 'task.created' || e.type === 'task.status') refetch(e.taskId);
  });

  return { byId, list, counts, statuses, search, workspace, workspaces, loading, error, selected, load, refetch };
});
