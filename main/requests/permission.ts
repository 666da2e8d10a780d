import type { Config } from '../core/config.js';
import { redactText } from '../core/redact.js';
import type { Db } from '../store/db.js';
import { grantsFor, pendingRequestOf } from '../store/requests.js';
import { getTask } from '../store/tasks.js';
import { decideRequest, type AskedFor } from './policy.js';
import type { AskInput } from '../tasks/contract/escalation.js';
import { openRequest, recordDenied } from './requests.js';

/** A tool call Claude Code asks permission for (its --permission-prompt-tool input). */
export interface PermissionCall {
  toolName: string;
  input: Record<string, unknown>;
}

/** Claude Code's permission-prompt answer: the tool's text block carries this JSON. */
export type PermissionAnswer =
  | { behavior: 'allow'; updatedInput: Record<string, unknown> }
  | { behavior: 'deny'; message: string; interrupt?: boolean };

const pick = (o: Record<string, unknown>, ...keys: string[]): string | null => {
  for (const k of keys) if (typeof o[k] === 'string' && o[k]) return o[k] as string;
  return null;
};

/** What a tool call reaches, for the request and the policy. */
export function describeCall(call: PermissionCall): AskInput & AskedFor {
  const i = call.input;
  const path = pick(i, 'file_path', 'notebook_path', 'path');
  const command = pick(i, 'command', 'url', 'query') ?? path ?? JSON.stringify(i).slice(0, 500);
  const scope = call.toolName === 'WebFetch' || call.toolName === 'WebSearch' ? 'network' : path ? `writes ${path}` : call.toolName === 'Bash' ? 'shell command' : null;
  return { kind: 'permission', question: `${call.toolName}: ${command}`, tool: call.toolName, command, scope, reason: pick(i, 'description'), path };
}

/**
 * Decide one permission prompt of a running task's turn (Claude Code's `--permission-prompt-tool`,
 * served by `lightworker mcp --permission-for <task>`). A grant a person gave for the same tool and
 * command (remembered, or answered for the attempt before this one) allows it; the policy may deny it
 * at once (outside the boundary, or configured so); anything else becomes a pending request and the
 * turn is interrupted: the task waits for a person and the answer resumes the same session (`--resume`),
 * instead of holding a worker process and a scheduler slot for as long as nobody answers.
 * Runs in the caller's write transaction.
 */
export function decidePermission(db: Db, config: Config, taskId: string, call: PermissionCall): PermissionAnswer {
  const t = getTask(db, taskId);
  if (!t || t.status !== 'running') return { behavior: 'deny', message: `LightWorker: task ${taskId} is ${t?.status ?? 'unknown'}, not running; nothing more may run.` };
  const asked = describeCall(call);
  const command = asked.command === null || asked.command === undefined ? null : redactText(asked.command).slice(0, 4000);
  if (grantsFor(db, taskId, t.attempt).some((g) => g.tool === call.toolName && g.command === command)) {
    return { behavior: 'allow', updatedInput: call.input };
  }
  const d = decideRequest(config, t, t.worktreePath ?? t.workspace, asked);
  if (d.decision === 'deny') {
    recordDenied(db, t, asked, d.reason);
    return { behavior: 'deny', message: `LightWorker denied this (${d.reason}). Do not try it again; continue without it.` };
  }
  if (!pendingRequestOf(db, taskId)) openRequest(db, config, t, asked);
  return {
    behavior: 'deny',
    message: 'LightWorker asked a person for this permission. Stop here: the answer comes back in this session.',
    interrupt: true,
  };
}
