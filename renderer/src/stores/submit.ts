import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api, isUnknownCommand } from '../api/client.js';
import type { GoalInput, TaskInput, TeamInput } from '../api/commands.js';
import type { TaskView } from '../api/types.js';
import { usePickers } from './pickers.js';

/** The forms: a goal (orchestrate_goal: a planner splits it), one task (delegate_task), a team (start_team). */
export const useSubmit = defineStore('submit', () => {
  const busy = ref(false);
  const error = ref<string | null>(null);
  const workspace = ref(localStorage.getItem('lightworker.workspace') ?? '');

  /** Run `create` (the command call); the task to open once it went through, else null with `error` set. */
  async function send(command: 'orchestrate_goal' | 'delegate_task' | 'start_team', where: string, create: () => Promise<TaskView>): Promise<TaskView | null> {
    busy.value = true;
    error.value = null;
    try {
      const task = await create();
      // Remembered only once the engine took it: a mistyped path is not offered again (nor an integration's
      // left-out workspace, which is its sources').
      if (where) {
        localStorage.setItem('lightworker.workspace', where);
        workspace.value = where;
        usePickers().remember(where);
      }
      return task;
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
  // A goal opens its plan task (orchestrate_goal answers the plan as `task`, a team its lead).
  const submitGoal = (i: GoalInput) => send('orchestrate_goal', i.workspace, async () => (await api().call('orchestrate_goal', i)).task);
  const submitTask = (i: TaskInput) => send('delegate_task', i.workspace, async () => (await api().call('delegate_task', i)).task);
  // A team opens its team view, from its root (the first task start_team made).
  const submitTeam = (i: TeamInput) => send('start_team', i.workspace ?? '', async () => (await api().call('start_team', i)).tasks[0]);
  return { busy, error, workspace, clearError, submitGoal, submitTask, submitTeam };
});
