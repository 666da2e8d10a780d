import type { Command } from 'commander';
import { AppError } from '../core/errors.js';
import type { TaskDiff } from '../isolation/diff.js';
import type { PruneReport } from '../isolation/prune.js';
import { withEngine } from './context.js';
import { err, out, printJson, table } from './output.js';

function parseHours(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new AppError('invalid_input', `ttl: expected a number of hours ≥ 0, got "${v}"`, { field: 'ttl' });
  return n;
}

/** accept, diff, prune: isolation commands over accept_task / get_task_diff / prune_workspaces. */
export function registerIsolationCommands(program: Command): void {
  program
    .command('accept')
    .description("apply a completed, verified task's changes onto the source repository as one commit")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--branch <branch>', 'squash onto this branch instead of the checked-out one')
    .option('--unverified', 'accept a task that had no verify commands')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('accept_task', { id, branch: o.branch, unverified: Boolean(o.unverified) });
        if (o.json) return printJson(r);
        if (r.commit)
          out(`accepted ${r.task.id}: ${r.commit.slice(0, 12)} on ${r.branch} (${r.files.length} file${r.files.length === 1 ? '' : 's'})`);
        else if (r.copiedTo) out(`accepted ${r.task.id}: ${r.files.length} file${r.files.length === 1 ? '' : 's'} copied back into ${r.copiedTo}`);
        else out(`accepted ${r.task.id}: no changes to apply`);
      });
    });

  program
    .command('diff')
    .description("show a task's diff from its base (size-capped)")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('get_task_diff', { id })) as TaskDiff;
        if (o.json) return printJson(r);
        if (r.diff) out(r.diff);
        if (r.note) err(r.note);
      });
    });

  program
    .command('prune')
    .description('list (or with --apply remove) worktrees of ended tasks past the TTL, orphans and half-done allocations')
    .option('--apply', 'remove them (default: dry run)')
    .option('--ttl <hours>', 'age after which ended tasks lose their worktree (default: worktrees.ttl_hours)', parseHours)
    .option('--force', 'also delete task branches holding commits found on no other branch')
    .option('--json', 'print the result as JSON')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('prune_workspaces', { apply: Boolean(o.apply), ttl_hours: o.ttl, force: Boolean(o.force) })) as PruneReport;
        if (o.json) return printJson(r);
        if (!r.items.length) return out('nothing to prune');
        const verb = (a: string, done?: boolean, e?: string) =>
          e
            ? `failed: ${e}`
            : r.applied
              ? a === 'remove'
                ? done
                  ? 'removed'
                  : 'remove'
                : 'kept'
              : a === 'remove'
                ? 'would remove'
                : 'would keep';
        out(
          table(
            ['ACTION', 'KIND', 'WHAT', 'WHY'],
            r.items.map((i) => [verb(i.action, i.done, i.error), i.kind, i.path ?? i.branch ?? '', i.reason]),
          ),
        );
        if (!r.applied) err('dry run: nothing was removed; run with --apply to remove');
      });
    });
}
