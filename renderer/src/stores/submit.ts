import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api, isUnknownCommand } from '../api/client.js';
import type { TaskView } from '../api/types.js';
import { usePickers } from './pickers.js';

/** The two forms: a goal (orchestrate_goal: a planner splits it) and one task (delegate_task). */
export const useSubmit = defineStore('submit', () => {
  const busy = ref(false);
  const error = ref<string | null>(null);
  const workspace = ref(localStorage.getItem('lightworker.workspace') ?? '');

  async function send(command: 'orchestrate_goal' | 'delegate_task', input: Record<string, unknown>): Promise<TaskView | null> {
    busy.value = true;
    error.value = null;
    try {
      const r = await api().call<{ task?: TaskView; plan?: TaskView; tasks?: TaskView[] }>(command, input);
      // Remembered only once the engine took it: a mistyped path is not offered again.
      if (typeof input.workspace === 'string') {
        localStorage.setItem('lightworker.workspace', input.workspace);
        workspace.value = input.workspace;
        usePickers().remember(input.workspace);
      }
      return r.task ?? r.plan ?? r.tasks?.[0] ?? null;
    } catch (err) {
      // The form speaks of its fields, not of the internal command ("delegate_task: workspace: …").
      error.value = isUnknownCommand(err) ? `${command} is not available yet in this build` : (err as Error).message.replace(`${command}: `, '');
      return null;
    } finally {
      busy.value = false;
    }
  }
  /** The user changed a field: an error about the previous attempt no longer applies. */
  function clearError(): void {
    error.value = null;
  }
  return { busy, error, workspace, clearError, submitGoal: (i: Record<string, unknown>) => send('orchestrate_goal', i), submitTask: (i: Record<string, unknown>) => send('delegate_task', i) };
});
