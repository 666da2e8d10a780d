import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { api } from '../api/client.js';
import { isFullTask, type TaskView } from '../api/types.js';
import { useLive } from './live.js';
import { keyedDebounce } from './refresh.js';
import { useNotices } from './notices.js';

/** The approval inbox: every task awaiting a person, kept current from task.status events. */
export const useApprovals = defineStore('approvals', () => {
  const byId = ref(new Map<string, TaskView>());
  const loaded = ref(false);
  const busy = ref(new Set<string>());
  const list = computed(() => [...byId.value.values()].sort((a, b) => (a.id < b.id ? -1 : 1)));

  async function load(): Promise<void> {
    const r = await api().call('list_tasks', { status: ['awaiting_approval'], limit: 1000, detail: true });
    byId.value = new Map(r.tasks.filter(isFullTask).map((t) => [t.id, t]));
    loaded.value = true;
  }

  const refetch = keyedDebounce(60, async (id) => {
    const next = new Map(byId.value);
    try {
      const { task } = await api().call('get_task', { id });
      if (task.status === 'awaiting_approval') next.set(id, task);
      else next.delete(id);
    } catch {
      next.delete(id);
    }
    byId.value = next;
  });

  useLive().listen((e) => {
    if (!e.taskId) return;
    // A task can be created straight into awaiting_approval (plan_only, execute under auto_readonly).
    if (e.type === 'task.created' && e.payload.status === 'awaiting_approval') return refetch(e.taskId);
    if (e.type !== 'task.status') return;
    if (e.payload.to === 'awaiting_approval' || e.payload.from === 'awaiting_approval' || byId.value.has(e.taskId)) refetch(e.taskId);
  });

  async function act(id: string, command: 'approve_task' | 'cancel_task'): Promise<void> {
    const name = byId.value.get(id)?.name ?? id;
    busy.value = new Set(busy.value).add(id);
    try {
      await api().call(command, { id });
      const next = new Map(byId.value);
      next.delete(id);
      byId.value = next;
      useNotices().info(command === 'approve_task' ? `Approved "${name}": it is queued` : `Rejected "${name}": it is cancelled`);
    } catch (err) {
      useNotices().error(err);
    } finally {
      const b = new Set(busy.value);
      b.delete(id);
      busy.value = b;
    }
  }

  return { list, loaded, busy, load, approve: (id: string) => act(id, 'approve_task'), reject: (id: string) => act(id, 'cancel_task') };
});
