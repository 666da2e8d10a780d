import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api } from '../api/client.js';
import type { TaskView } from '../api/types.js';
import { useLive } from './live.js';
import { keyedDebounce } from './refresh.js';

/** A task another one points at (a dependency, its parent or plan root), or why it could not be read. */
export type RelatedTask = Pick<TaskView, 'id' | 'name' | 'kind' | 'status'> | { id: string; missing: string };

/** The ids a review shows beside a task: its dependencies, its parent and its root. */
export function relatedIdsOf(t: TaskView): string[] {
  const ids = [...t.dependsOn];
  if (t.parentId) ids.push(t.parentId);
  if (t.rootId !== t.id && t.rootId !== t.parentId) ids.push(t.rootId);
  return ids;
}

/** Name, kind and live status of tasks that reviews refer to, read through get_task and kept current. */
export const useRelatedTasks = defineStore('related-tasks', () => {
  const byId = ref(new Map<string, RelatedTask>());

  /** Read the `ids` not known yet (all of them with `force`). */
  async function ensure(ids: string[], force = false): Promise<void> {
    const want = [...new Set(ids)].filter((id) => force || !byId.value.has(id));
    if (!want.length) return;
    const got = await Promise.all(
      want.map(async (id): Promise<RelatedTask> => {
        try {
          const { task } = await api().call('get_task', { id });
          return { id, name: task.name, kind: task.kind, status: task.status };
        } catch (err) {
          return { id, missing: (err as Error).message };
        }
      }),
    );
    const next = new Map(byId.value);
    for (const r of got) next.set(r.id, r);
    byId.value = next;
  }

  const refetch = keyedDebounce(120, (id) => void ensure([id], true));
  useLive().listen((e) => {
    if (e.taskId && e.type === 'task.status' && byId.value.has(e.taskId)) refetch(e.taskId);
  });

  return { byId, ensure };
});
