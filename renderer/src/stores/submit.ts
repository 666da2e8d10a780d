import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api, isUnknownCommand } from '../api/client.js';
import type { TaskView } from '../api/types.js';

/** The two forms: a goal (orchestrate_goal: a planner splits it) and one task (delegate_task). */
export const useSubmit = defineStore('submit', () => {
  const busy = ref(false);
  const error = ref<string | null>(null);
  const workspace = ref(localStorage.getItem('lightworker.workspace') ?? '');

  async function send(command: 'orchestrate_goal' | 'delegate_task', input: Record<string, unknown>): Promise<TaskView | null> {
    busy.value = true;
    error.value = null;
    try {
      if (typeof input.workspace === 'string') localStorage.setItem('lightworker.workspace', input.workspace);
      const r = await api().call<{ task?: TaskView; plan?: TaskView; tasks?: TaskView[] }>(command, input);
      return r.task ?? r.plan ?? r.tasks?.[0] ?? null;
    } catch (err) {
      error.value = isUnknownCommand(err) ? `${command} is not available yet in this build` : (err as Error).message;
      return null;
    } finally {
      busy.value = false;
    }
  }
  return { busy, error, workspace, submitGoal: (i: Record<string, unknown>) => send('orchestrate_goal', i), submitTask: (i: Record<string, unknown>) => send('delegate_task', i) };
});
