import type { Command } from 'commander';
import { AppError } from '../core/errors.js';
import type { TaskRequest } from '../store/requests.js';
import { withEngine } from './context.js';
import { ago, out, printJson } from './output.js';

/** One request as a person reads it in a terminal. */
function requestLines(r: TaskRequest & { task?: { name: string } }): string {
  const head = `${r.taskId}  ${r.kind}${r.status !== 'pending' ? ` (${r.status}${r.decision ? `: ${r.decision}` : ''})` : ''}  ${ago(r.createdAt)}${r.task ? `  ${r.task.name}` : ''}`;
  const body = r.kind === 'permission' ? [`  ${r.tool ?? 'tool'}: ${r.command ?? r.question}`, ...(r.scope ? [`  scope: ${r.scope}`] : []), ...(r.reason ? [`  why: ${r.reason}`] : [])] : [`  ${r.question}`];
  if (r.options.length) body.push(`  options: ${r.options.join(' | ')}`);
  if (r.status === 'pending') body.push(`  answer: lightworker answer ${r.taskId} ${r.kind === 'permission' ? '--allow | --deny [--remember]' : r.kind === 'budget' ? '--allow [new limit] | --deny' : '"…"'}   (expires ${new Date(r.expiresAt).toISOString()})`);
  else if (r.answer) body.push(`  answer: ${r.answer}`);
  return [head, ...body].join('\n');
}

/** `followup`, and the other ways of talking to a task once it started. */
export function registerConversationCommands(program: Command): void {
  program
    .command('followup')
    .description("send a message to an ended task's native session (a new attempt in the same worktree)")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .argument('<message...>', 'the next user message')
    .option('--worker <name>', 'hand the task to another worker (a fresh session with a summary)')
    .option('--json')
    .action(async (id: string, words: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('followup_task', { id, message: words.join(' '), worker: o.worker });
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}  attempt ${r.task.attempt}${o.worker ? `  worker ${r.task.worker}` : ''}`);
      });
    });

  for (const [name, command, description] of [
    ['pause', 'pause_task', 'pause a queued task, or one waiting for an answer (its request stops expiring)'],
    ['resume', 'resume_task', 'resume a paused task where it was'],
    ['reverify', 'reverify_task', 'run the verify commands of a task again (no worker turn)'],
  ] as const) {
    program
      .command(name)
      .description(description)
      .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
      .option('--json')
      .action(async (id: string, o, cmd: Command) => {
        await withEngine(cmd, async (call) => {
          const r = await call(command, { id });
          if (o.json) printJson(r);
          else out(`${r.task.id}  ${r.task.status}  attempt ${r.task.attempt}`);
        });
      });
  }

  program
    .command('reject')
    .description("reject a completed task's change (its worktree stays until prune)")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--reason <text>')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('reject_task', { id, reason: o.reason });
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}`);
      });
    });

  program
    .command('redirect')
    .description("replace a task's objective (a running worker gets it at its next turn)")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .argument('<objective...>', 'the new objective')
    .option('--json')
    .action(async (id: string, words: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('redirect_task', { id, objective: words.join(' ') });
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}  (objective replaced)`);
      });
    });

  program
    .command('answer')
    .description("answer a waiting task's question (text), permission request (--allow / --deny) or budget (--allow [new limit] raises it, --deny stops)")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .argument('[text...]', 'the answer (a question), or a note (a permission)')
    .option('--allow', 'grant the permission it asks for')
    .option('--deny', 'refuse the permission it asks for')
    .option('--remember', 'with --allow: also allow the same tool and command for the rest of the task')
    .option('--json')
    .action(async (id: string, words: string[], o, cmd: Command) => {
      if (o.allow && o.deny) throw new AppError('invalid_input', 'decision: --allow and --deny exclude each other', { field: 'decision' });
      await withEngine(cmd, async (call) => {
        const text = words.join(' ').trim();
        const r = await call('answer_task', { id, text: text || undefined, decision: o.allow ? 'allow' : o.deny ? 'deny' : undefined, remember: o.remember || undefined });
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}  attempt ${r.task.attempt}  (${r.request.kind} ${r.request.decision})`);
      });
    });

  program
    .command('requests')
    .description('questions and permission requests waiting for a person (--all: answered ones too)')
    .option('--all', 'every status, not only pending')
    .option('--task <id>', 'only this task')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('list_requests', { task_id: o.task, ...(o.all ? { status: ['pending', 'answered', 'expired', 'cancelled'] } : {}) });
        if (o.json) printJson(r);
        else if (!r.requests.length) out(o.all ? 'no requests' : 'nothing waits for an answer');
        else out(r.requests.map(requestLines).join('\n\n'));
      });
    });
}


