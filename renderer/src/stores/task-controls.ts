import { defineStore } from 'pinia';
import { ref } from 'vue';
import { api, isUnknownCommand } from '../api/client.js';
import type { TaskView } from '../api/types.js';
import { useNotices } from './notices.js';
import { useTaskDetail } from './task-detail.js';

/** The controls on a task after it started, each one engine command. */
export type Control = 'followup' | 'redirect' | 'handoff' | 'reverify' | 'pause' | 'resume' | 'reject';

/** What the confirm step collected: the follow-up or the new objective, the handoff's worker and note, a reason. */
export interface ControlInput {
  text: string;
  worker: string;
}

type Outcome = { status: string; attempt: number; worker: string };

/** The command each control sends, with the input it needs. */
async function send(control: Control, id: string, f: ControlInput): Promise<Outcome> {
  const note = f.text.trim() ? f.text : undefined;
  switch (control) {
    case 'followup':
      return (await api().call('followup_task', { id, message: f.text })).task;
    case 'redirect':
      return (await api().call('redirect_task', { id, objective: f.text })).task;
    case 'handoff':
      return (await api().call('handoff_task', { id, worker: f.worker, ...(note ? { note } : {}) })).task;
    case 'reverify':
      return (await api().call('reverify_task', { id })).task;
    case 'pause':
      return (await api().call('pause_task', { id })).task;
    case 'resume':
      return (await api().call('resume_task', { id })).task;
    case 'reject':
      return (await api().call('reject_task', { id, ...(note ? { reason: note } : {}) })).task;
  }
}

const STATUS_WORDS: Record<string, string> = { queued: 'queued', awaiting_approval: 'waiting for your approval', waiting_input: 'waiting for your answer', paused: 'paused', rejected: 'rejected' };

/** The line that says what happened, named after the control and the state the engine put the task in. */
function outcomeLine(control: Control, t: Outcome, f: ControlInput): string {
  const state = STATUS_WORDS[t.status] ?? t.status;
  switch (control) {
    case 'followup':
      return `Follow-up sent: attempt ${t.attempt} is ${state}`;
    case 'redirect':
      return `Redirected: the worker gets the new objective at its next turn (task is ${state})`;
    case 'handoff':
      return `Handed off to ${f.worker}: attempt ${t.attempt} is ${state}`;
    case 'reverify':
      return `Verification runs again: attempt ${t.attempt} is ${state}`;
    case 'pause':
      return 'Paused: the task waits until you resume it';
    case 'resume':
      return `Resumed: the task is ${state}`;
    case 'reject':
      return 'Rejected: its change stays out of your branch';
  }
}

/**
 * One control at a time on the open task: it runs the command, says what happened (a notice and a line that
 * stays on the page), reloads the task, and keeps the engine's refusal beside the confirm step.
 */
export const useTaskControls = defineStore('task-controls', () => {
  const open = ref<Control | null>(null);
  const busy = ref(false);
  const error = ref<string | null>(null);
  const outcome = ref<string | null>(null);

  function start(control: Control): void {
    open.value = control;
    error.value = null;
  }
  function close(): void {
    open.value = null;
    error.value = null;
  }
  /** A control belongs to one task: switching tasks forgets what was open and what happened. */
  function reset(): void {
    close();
    outcome.value = null;
  }

  async function confirm(task: TaskView, f: ControlInput): Promise<boolean> {
    const control = open.value;
    if (!control) return false;
    busy.value = true;
    error.value = null;
    try {
      const t = await send(control, task.id, f);
      outcome.value = outcomeLine(control, t, f);
      useNotices().info(outcome.value);
      open.value = null;
      await useTaskDetail().reload();
      return true;
    } catch (err) {
      error.value = isUnknownCommand(err) ? `${control} is not available on this server` : (err as Error).message;
      return false;
    } finally {
      busy.value = false;
    }
  }

  return { open, busy, error, outcome, start, close, reset, confirm };
});
