import type { Config } from '../core/config.js';
import type { TaskSummary } from '../tasks/summary.js';

/**
 * What a waiter does next when a wait ends on a person (`needs_approval`, `needs_input`): who acts and
 * where, so a host that cannot approve asks its user instead of waiting again in a loop. Says the truth of
 * this home's `approvals.allow_mcp`.
 */
export function nextStep(reason: string, tasks: TaskSummary[], config: Config): string | undefined {
  const allowMcp = config.approvals.allow_mcp;
  if (reason === 'needs_approval') {
    const ids = [...new Set(tasks.flatMap((t) => (t.status === 'awaiting_approval' ? [t.id] : (t.waitingOn ?? []))))];
    const where = `a person approves ${ids.join(', ')} in the LightWorker console's approval inbox (desktop app or \`lightworker serve\`) or with \`lightworker approve ${ids.join(' ')}\``;
    return allowMcp
      ? `${where}; approve_task may approve it over MCP (approvals.allow_mcp = true).`
      : `${where}; approve_task over MCP is refused here (approvals.allow_mcp is off): ask your user to approve, and wait again only after they have.`;
  }
  if (reason === 'needs_input') {
    const asks = tasks.filter((t) => t.status === 'waiting_input');
    const parts = asks.map((t) =>
      t.needs?.kind === 'permission'
        ? `${t.id} asks a permission: answer_task {id, decision: "allow"|"deny"}${allowMcp ? '' : ' (allow only by a person here: approvals.allow_mcp is off)'}, or \`lightworker answer ${t.id} --allow|--deny\``
        : `${t.id} asks a question: answer_task {id, text}, or \`lightworker answer ${t.id} "…"\``,
    );
    return `${parts.join('; ')}; a person can also answer in the console's inbox. The task continues once answered.`;
  }
  return undefined;
}
