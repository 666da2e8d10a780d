import type { EventRow } from '../api/types.js';

const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const words = (s: string) => s.replace(/_/g, ' ');
const plural = (n: number, one: string) => `${n} ${n === 1 ? one : `${one}s`}`;
const clip = (s: string, max = 160) => (s.length > max ? `${s.slice(0, max)}…` : s);
const ms = (v: unknown) => (num(v) === null ? '' : ` in ${Math.round(num(v)!)} ms`);

/** The parts of an event's type as words: `worktree.branch_kept` → "worktree: branch kept". */
function typeWords(type: string): string {
  const [area, ...rest] = type.split('.');
  return rest.length ? `${area}: ${words(rest.join(' '))}` : words(area);
}

/**
 * One event as a sentence a person reads in the Events card; the raw payload stays one click away. Types it
 * does not know read as their name in words, plus a message or reason when the payload has one.
 */
export function describeEvent(e: EventRow): string {
  switch (e.type) {
    case 'task.created':
      return `Created as ${e.payload.kind ?? 'a task'} for ${e.payload.worker ?? 'its worker'}${e.payload.mode ? ` (${words(e.payload.mode)})` : ''}${e.payload.status ? `, ${words(e.payload.status)}` : ''}`;
    case 'task.status': {
      const from = Array.isArray(e.payload.from) ? e.payload.from.join(' or ') : (e.payload.from ?? '?');
      return `Status ${words(from)} → ${words(e.payload.to ?? '?')}${e.payload.reason ? `: ${clip(e.payload.reason)}` : ''}`;
    }
    case 'task.cancel_requested':
      return `Cancel requested by ${e.payload.by ?? 'someone'}${e.payload.reason ? `: ${e.payload.reason}` : ''}`;
    case 'task.redirected':
      return `Redirected by ${e.payload.by ?? 'someone'}: ${clip(e.payload.objective ?? '')}`;
    case 'task.route': {
      const p = e.payload;
      return `Route for attempt ${p.attempt}: ${str(p.worker) ?? 'worker'}${str(p.model) ? ` · model ${String(p.model)}` : ''} via ${str(p.gateway) ?? (str(p.host) && p.host !== 'default' ? String(p.host) : null) ?? 'its default endpoint'}`;
    }
    case 'task.rerouted':
      return `Moved to its model's ${e.payload.route ?? 'other'} route, gateway ${e.payload.to ?? '?'}: ${clip(String(e.payload.message ?? ''))}`;
    case 'task.changes': {
      const outside = e.payload.violations?.length ?? 0;
      return e.payload.empty ? 'No files changed' : `${plural(e.payload.changedFiles?.length ?? 0, 'file')} changed${outside ? `, ${plural(outside, 'outside the allowed paths')}` : ''}`;
    }
    case 'task.accepted':
      return `Accepted by ${e.payload.by}: ${plural(e.payload.files?.length ?? 0, 'file')}${e.payload.commit ? ` in commit ${e.payload.commit.slice(0, 10)}` : ''}${e.payload.branch ? ` on ${e.payload.branch}` : ''}`;
    case 'plan.expanded':
      return `Plan expanded into ${plural(e.payload.tasks?.length ?? 0, 'task')}: ${clip(e.payload.summary ?? '')}`;
    case 'request.created':
      return `Asked a person (${e.payload.kind})${str(e.payload.question) ? `: ${clip(String(e.payload.question))}` : ''}`;
    case 'request.answered':
      return `Answered by ${e.payload.by}: ${e.payload.decision ?? (e.payload.answer !== undefined ? `“${clip(e.payload.answer)}”` : 'answered')}${e.payload.remember ? ' (for this task)' : ''}`;
    case 'request.denied':
      return `Denied by policy: ${e.payload.reason}`;
    case 'request.expired':
      return `Nobody answered (${e.payload.kind}) within ${Math.round((e.payload.waitedS ?? 0) / 60)} min: expired`;
    case 'request.cancelled':
      return `Request cancelled: ${e.payload.reason}`;
    case 'worker.prompt':
      return `Prompt sent${num(e.payload.promptBytes) !== null ? `: ${Number(e.payload.promptBytes).toLocaleString('en-US')} bytes` : ''}${str(e.payload.model) ? ` to ${String(e.payload.model)}` : ''}`;
    case 'worker.started':
      return `Worker started${str(e.payload.model) ? ` with ${String(e.payload.model)}` : ''}${str(e.payload.sessionId) ? `, session ${String(e.payload.sessionId)}` : ''}`;
    case 'worker.message':
      return `Worker said: ${clip(String(e.payload.text ?? ''))}`;
    case 'worker.tool':
      return `Tool ${str(e.payload.name) ?? 'call'}${str(e.payload.status) ? ` (${String(e.payload.status)})` : ''}`;
    case 'worker.usage': {
      const p = e.payload;
      return `Used ${Number(p.inputTokens ?? 0).toLocaleString('en-US')} input tokens (${Number(p.cachedTokens ?? 0).toLocaleString('en-US')} from the cache) and ${Number(p.outputTokens ?? 0).toLocaleString('en-US')} output tokens`;
    }
    case 'worker.completed':
      return 'Worker finished its turn';
    case 'worker.failed':
      return `Worker failed: ${clip(String(e.payload.message ?? ''))}`;
    case 'verify.started':
      return `Verification run ${e.payload.run ?? ''} started: ${plural(e.payload.commands ?? 0, 'command')}`;
    case 'verify.command': {
      const argv = Array.isArray(e.payload.command) ? e.payload.command.map(String).join(' ') : String(e.payload.command ?? '');
      return `Checked \`${clip(argv, 80)}\`: ${e.payload.timedOut ? 'timed out' : `exit ${String(e.payload.exitCode)}`}${ms(e.payload.durationMs)}`;
    }
    case 'verify.completed':
      return e.payload.ok ? 'Verification passed' : 'Verification failed';
    case 'worktree.allocated':
      return `Worktree ready at ${String(e.payload.path)}${str(e.payload.branch) ? ` on branch ${String(e.payload.branch)}` : ''}${ms(e.payload.durationMs)}`;
    case 'worktree.removed':
      return `Worktree removed (${e.payload.reason})`;
    case 'review.comment':
      return `Comment by ${e.payload.by} on ${e.payload.file}:${e.payload.line}: ${clip(e.payload.text ?? '')}`;
    case 'review.sent':
      return `${plural(e.payload.count ?? 0, 'review comment')} sent to the worker by ${e.payload.by}`;
    case 'pr.opened':
      return `Pull request #${e.payload.number} opened: ${e.payload.url}`;
    case 'pr.merged':
      return `Pull request #${e.payload.number} merged`;
    default: {
      const p = e.payload as Record<string, unknown>;
      const why = str(p.message) ?? str(p.reason) ?? str(p.error);
      return `${typeWords(e.type)}${why ? `: ${clip(why)}` : ''}`;
    }
  }
}
