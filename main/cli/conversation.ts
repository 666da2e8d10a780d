import type { Command } from 'commander';
import { withEngine } from './context.js';
import { out, printJson } from './output.js';

/** `followup`, and the other ways of talking to a task once it started (issue 15). */
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
}
