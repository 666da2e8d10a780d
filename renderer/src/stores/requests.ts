import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { api } from '../api/client.js';
import type { RequestView } from '../api/types.js';
import { useLive } from './live.js';
import { useNotices } from './notices.js';

export interface RequestAnswer {
  text?: string;
  decision?: 'allow' | 'deny';
  remember?: boolean;
}

/** Questions and permission requests waiting for a person, kept current from request.* events. */
export const useRequests = defineStore('requests', () => {
  const byTask = ref(new Map<string, RequestView>());
  const loaded = ref(false);
  const busy = ref(new Set<string>());
  const list = computed(() => [...byTask.value.values()].sort((a, b) => a.createdAt - b.createdAt));
  let reloading: Promise<void> | null = null;

  async function load(): Promise<void> {
    const r = await api().call('list_requests', { status: ['pending'], limit: 1000 });
    byTask.value = new Map(r.requests.map((q) => [q.taskId, q]));
    loaded.value = true;
  }

  useLive().listen((e) => {
    // A redirect changes the objective the request's context shows; a pause or resume whether it can be answered.
    const ownTask = (e.type === 'task.redirected' || e.type === 'task.status') && !!e.taskId && byTask.value.has(e.taskId);
    if (!e.type.startsWith('request.') && !ownTask) return;
    reloading ??= load().finally(() => (reloading = null));
  });

  async function answer(taskId: string, a: RequestAnswer): Promise<void> {
    const name = byTask.value.get(taskId)?.task.name ?? taskId;
    busy.value = new Set(busy.value).add(taskId);
    try {
      await api().call('answer_task', { id: taskId, ...a });
      const next = new Map(byTask.value);
      next.delete(taskId);
      byTask.value = next;
      const what = a.decision === 'allow' ? 'Allowed' : a.decision === 'deny' ? 'Denied' : 'Answered';
      useNotices().info(`${what} "${name}": it continues in the same session`);
    } catch (err) {
      useNotices().error(err);
    } finally {
      const b = new Set(busy.value);
      b.delete(taskId);
      busy.value = b;
    }
  }

  /** The pending request of one task, if it has one. */
  const forTask = (taskId: string): RequestView | undefined => byTask.value.get(taskId);

  return { list, loaded, busy, load, answer, forTask };
});
