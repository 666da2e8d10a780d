import type { PullRecord } from '../store/pulls.js';
import type { Command } from 'commander';
import { AppError } from '../core/errors.js';
import { parseCommentRef, type ReviewComment } from '../isolation/review-comments.js';
import { withEngine } from './context.js';
import { out, printJson } from './output.js';

/** What a line about a pull request shows of it (get_pull_request / open_pull_request answer more). */
type ShownPull = Pick<PullRecord, 'number' | 'url' | 'forge' | 'branch' | 'base' | 'draft' | 'state' | 'checks' | 'review' | 'fixRounds' | 'fixing' | 'lastError'>;

function pullLine(p: ShownPull): string {
  const facts = [p.state, `checks ${p.checks}`, ...(p.review !== 'none' ? [p.review.replace('_', ' ')] : []), ...(p.draft ? ['draft'] : []), ...(p.fixRounds ? [`fix rounds ${p.fixRounds}${p.fixing ? ' (fixing)' : ''}`] : [])];
  return `#${p.number} ${p.url}\n  ${p.branch} → ${p.base} on ${p.forge}: ${facts.join(', ')}${p.lastError ? `\n  last poll: ${p.lastError}` : ''}`;
}

/** `--comment FILE:LINE[-LINE] "text"` pairs, as given (a variadic option collects them all). */
export function commentsOf(words: string[] | undefined): { file: string; line: number; end_line?: number; text: string }[] {
  const w = words ?? [];
  if (w.length % 2) throw new AppError('invalid_input', '--comment: expected FILE:LINE[-LINE] "text" pairs', { field: 'comments' });
  const out: { file: string; line: number; end_line?: number; text: string }[] = [];
  for (let i = 0; i < w.length; i += 2) {
    const ref = parseCommentRef(w[i]);
    out.push({ file: ref.file, line: ref.line, ...(ref.endLine !== undefined ? { end_line: ref.endLine } : {}), text: w[i + 1] });
  }
  return out;
}

function commentLine(c: ReviewComment): string {
  const range = c.endLine !== c.line ? `${c.line}-${c.endLine}` : `${c.line}`;
  return `${c.file}:${range}  ${c.sentAs !== null ? `sent as attempt ${c.sentAs}` : 'unsent'}  ${c.text}`;
}

/** `pr` and `review`: from a verified task to a pull request, and comments on its diff. */
export function registerPullCommands(program: Command): void {
  program
    .command('pr')
    .description("push a verified task's branch to the remote and open a draft pull request (GitHub, GitLab, Gitea); --status shows it")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--branch <name>', 'the branch name on the remote (default lightworker/<task name>-<id>)')
    .option('--base <branch>', 'the branch it merges into (default: the repository default)')
    .option('--ready', 'open it ready for review instead of as a draft')
    .option('--unverified', 'open it for a task that had no verify commands')
    .option('--status', "show the task's pull request instead of opening one")
    .option('--refresh', 'with --status: look at the forge now')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = o.status
          ? await call('get_pull_request', { id, refresh: Boolean(o.refresh) })
          : await call('open_pull_request', { id, branch: o.branch, base: o.base, ...(o.ready ? { draft: false } : {}), unverified: Boolean(o.unverified) });
        if (o.json) return printJson(r);
        out(pullLine(r.pull as ShownPull));
      });
    });

  program
    .command('review')
    .description("comment on lines of a task's diff; --send sends every unsent comment to its session as one follow-up turn")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--comment <ref-and-text...>', 'FILE:LINE[-LINE] "text" (repeatable)')
    .option('--send', 'send the review: one follow-up turn, then verification again')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const comments = commentsOf(o.comment as string[] | undefined);
        const r = !comments.length && !o.send ? await call('list_review_comments', { id }) : await call('review_task', { id, comments, send: Boolean(o.send) });
        if (o.json) return printJson(r);
        for (const c of r.comments as ReviewComment[]) out(commentLine(c));
        if (r.sent?.length) out(`sent ${r.sent.length} comment${r.sent.length === 1 ? '' : 's'}: ${r.task.id} ${r.task.status}, attempt ${r.task.attempt}`);
      });
    });
}
