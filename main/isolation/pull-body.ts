import { redactText } from '../core/redact.js';
import type { PullHost } from './pull-host.js';
import { listEvents } from '../store/events.js';
import { costOfTask, effectivePrices } from '../tasks/cost.js';
import type { Task } from '../tasks/types.js';

const TITLE_MAX = 72;

/** The pull request's title: the task's name, else the objective's first line, cut to one line. */
export function pullTitle(task: Task): string {
  const first = (task.name || task.objective).split('\n')[0].trim();
  return redactText(first.length > TITLE_MAX ? `${first.slice(0, TITLE_MAX - 1)}…` : first);
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ').slice(0, 200);
}

/** The verification runs of the task's latest verify, as a Markdown table. */
function verificationTable(engine: PullHost, task: Task): string {
  const { events } = listEvents(engine.db, { taskId: task.id, types: ['verify.started', 'verify.command', 'verify.completed'], limit: 5000 });
  const start = events.map((e) => e.type).lastIndexOf('verify.started');
  if (start === -1) return task.verify.length ? '_Verification has not run._' : '_No verify commands: nothing checked this change but review._';
  const rows = events.slice(start).filter((e) => e.type === 'verify.command');
  const lines = ['| Command | Result | Time |', '| --- | --- | --- |'];
  for (const e of rows) {
    const cmd = Array.isArray(e.payload.command) ? (e.payload.command as string[]).join(' ') : String(e.payload.command);
    const result = e.payload.timedOut ? 'timed out' : e.payload.exitCode === 0 ? 'passed' : `exit ${String(e.payload.exitCode)}`;
    lines.push(`| \`${cell(cmd)}\` | ${result} | ${(Number(e.payload.durationMs ?? 0) / 1000).toFixed(1)} s |`);
  }
  return lines.join('\n');
}

/**
 * The pull request's body: the objective, the worker's summary, the verification table and the cost,
 * each redacted (a secret in an objective stays out of the forge too).
 */
export function pullBody(engine: PullHost, task: Task): string {
  const r = (task.result ?? {}) as Record<string, unknown>;
  const summary = typeof r.summary === 'string' ? r.summary : typeof r.text === 'string' ? r.text : '';
  const cost = costOfTask(engine.db, effectivePrices(engine.config), task.id);
  const tokens = cost.models.reduce((n, m) => n + m.inputTokens + m.outputTokens, 0);
  const costLine = cost.usd !== null ? `$${cost.usd.toFixed(4)} (${tokens} tokens)` : tokens ? `${tokens} tokens (unpriced)` : 'no usage recorded';
  const parts = [
    '## Objective',
    task.objective.trim(),
    ...(summary ? ['## Summary', summary.trim()] : []),
    '## Verification',
    verificationTable(engine, task),
    '## Cost',
    `${costLine}; worker ${task.worker}${task.model ? `, model ${task.model}` : ''}, attempt ${task.attempt}.`,
    '---',
    `Opened by LightWorker from task \`${task.id}\`. LightWorker never merges this itself.`,
  ];
  return redactText(parts.join('\n\n'));
}
