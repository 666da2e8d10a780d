import { CONTROL_STATUSES, type TaskView } from '../api/types.js';
import type { Control } from '../stores/task-controls.js';

/** How a control reads on the task page: its button, its confirm step, and what it asks for. */
export interface ControlSpec {
  control: Control;
  label: string;
  /** What it does, said in the confirm step before anything is sent. */
  explain: (t: TaskView) => string;
  /** The text box of the confirm step, when it takes one; required ones must be filled. */
  text?: { label: string; required: boolean; initial?: (t: TaskView) => string };
  /** The handoff's target worker. */
  worker?: boolean;
  confirm: string;
  danger?: boolean;
}

const has = (list: readonly string[], status: string) => list.includes(status);

export const CONTROLS: ControlSpec[] = [
  {
    control: 'followup',
    label: 'Follow up',
    explain: (t) => `A new attempt continues ${t.worker}'s session${t.kind === 'execute' ? ' in the same worktree and branch' : ''} with your message as the next turn.${t.status === 'waiting_input' ? ' It takes the place of the answer the task waits for.' : ''}`,
    text: { label: 'Message to the worker', required: true },
    confirm: 'Send follow-up',
  },
  {
    control: 'redirect',
    label: 'Redirect',
    explain: (t) => (['starting', 'running', 'verifying'].includes(t.status) ? 'The running worker gets the new objective at its next turn, in the same session.' : 'The task runs with the new objective instead of the old one.'),
    text: { label: 'New objective', required: true, initial: (t) => t.objective },
    confirm: 'Replace objective',
  },
  {
    control: 'handoff',
    label: 'Hand off',
    explain: (t) => `Another worker continues from ${t.worker}'s work${t.kind === 'execute' ? ' in the same worktree' : ''}, with a summary of the last attempt.`,
    text: { label: 'Note for the next worker (optional)', required: false },
    worker: true,
    confirm: 'Hand off',
  },
  {
    control: 'reverify',
    label: 'Reverify',
    explain: (t) => `Run its ${t.verify.length} verify command${t.verify.length === 1 ? '' : 's'} again as a new attempt, without a worker turn.`,
    confirm: 'Run verification',
  },
  {
    control: 'pause',
    label: 'Pause',
    explain: (t) => (t.status === 'queued' ? 'The scheduler does not start it until you resume it.' : 'Its question stays open and its expiry stops counting until you resume it.'),
    confirm: 'Pause',
  },
  {
    control: 'resume',
    label: 'Resume',
    explain: () => 'It goes back where it was paused: queued, or waiting for your answer.',
    confirm: 'Resume',
  },
  {
    control: 'reject',
    label: 'Reject',
    explain: () => 'Its change is not merged and tasks that depend on it are blocked; the worktree stays until prune. A follow-up can still rework it.',
    text: { label: 'Reason (optional)', required: false },
    confirm: 'Reject change',
    danger: true,
  },
];

/** Whether the engine takes `control` on `t` now (its state, and what the control needs of the task). */
export function offers(control: Control, t: TaskView): boolean {
  switch (control) {
    case 'followup':
    case 'handoff':
      return t.kind !== 'plan' && has(CONTROL_STATUSES.followup, t.status);
    case 'redirect':
      return has(CONTROL_STATUSES.redirect, t.status);
    case 'reverify':
      return has(CONTROL_STATUSES.reverify, t.status) && t.verify.length > 0 && (t.kind !== 'execute' || !!t.worktreePath);
    case 'pause':
      return has(CONTROL_STATUSES.pause, t.status);
    case 'resume':
      return has(CONTROL_STATUSES.resume, t.status);
    case 'reject':
      return has(CONTROL_STATUSES.reject, t.status);
  }
}
