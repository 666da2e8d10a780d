import type { Command } from 'commander';
import { resolve } from 'node:path';
import { parseAge } from '../core/age.js';
import type { GcReport } from '../isolation/gc.js';
import type { ImportReport, TreeSummary } from '../store/transfer.js';
import { withEngine } from './context.js';
import { err, out, printJson } from './output.js';

function mib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

function printGc(r: GcReport): void {
  const verb = r.applied ? 'deleted' : 'would delete';
  const shown = r.trees.slice(0, 30);
  for (const t of shown) out(`${t.action === 'delete' ? (r.applied ? (t.done ? 'deleted' : 'FAILED ') : 'delete ') : 'keep   '}  ${t.rootId}  ${String(t.tasks).padStart(4)} task(s)  ${String(t.events).padStart(6)} events  ${mib(t.bytes).padStart(10)}  ${t.error ?? t.reason}`);
  if (r.trees.length > shown.length) out(`… and ${r.trees.length - shown.length} more trees (--json lists them all)`);
  for (const o of r.orphans) out(`${r.applied ? 'deleted' : 'delete '}  ${o.path}  ${mib(o.bytes)}  folder of a task that no longer exists`);
  out(`${verb} ${r.totals.trees} tree(s), ${r.totals.tasks} task(s), ${r.totals.events} events, ${mib(r.totals.bytes)} (ended before ${new Date(r.cutoff).toISOString()}; ${r.totals.kept} kept) in ${r.durationMs} ms`);
  if (!r.applied && r.totals.trees) out('dry run: nothing was deleted; add --apply to delete');
}

export function registerDataCommands(program: Command): void {
  program
    .command('gc')
    .description('delete task trees that ended long ago, with their events, artifacts, logs and worktrees (dry run unless --apply)')
    .requiredOption('--older-than <age>', 'trees whose last task ended longer ago than this: 30d, 12h, 90m, 2w')
    .option('--apply', 'delete (without it, only show what would go)')
    .option('--force', 'also delete trees whose branches or worktrees hold work nobody accepted or merged')
    .option('--json')
    .addHelpText('after', '\nEach deleted tree leaves a signed tombstone in the event log: `lightworker audit verify` stays clean and lists them.\nA tree that a task of another tree depends on is kept. `[retention]` in config.toml runs this automatically.')
    .action(async (o, cmd: Command) => {
      parseAge(o.olderThan, '--older-than');
      const r = (await withEngine(cmd, (call) => call('gc_home', { older_than: o.olderThan, apply: Boolean(o.apply), force: Boolean(o.force) }))) as GcReport;
      if (o.json) printJson(r);
      else printGc(r);
      if (r.trees.some((t) => t.error)) process.exitCode = 1;
    });

  program
    .command('export')
    .description('write ended task trees as JSON lines (to stdout): tasks with results, dependencies, attempts, events, artifact lists')
    .option('--tree <id>', 'only the tree of this task (any task of it; a unique id prefix of 6+ characters will do)')
    .option('--dry-run', 'only list the trees that would be exported (on stderr)')
    .addHelpText('after', '\nExample: lightworker export > trees.jsonl, then in the other home: lightworker import trees.jsonl\nArtifact files stay in this home; their names and sizes travel.')
    .action(async (o, cmd: Command) => {
      const r = (await withEngine(cmd, (call) => call('export_trees', { root_id: o.tree, dry_run: Boolean(o.dryRun) }))) as { trees: TreeSummary[]; lines: string[] | null };
      if (r.lines) process.stdout.write(r.lines.join('\n') + '\n');
      err(`${o.dryRun ? 'would export' : 'exported'} ${r.trees.length} tree(s), ${r.trees.reduce((n, t) => n + t.tasks, 0)} task(s), ${r.trees.reduce((n, t) => n + t.events, 0)} events`);
    });

  program
    .command('import')
    .description('bring task trees from an export file into this home, in one transaction (trees already here are skipped)')
    .argument('<file>', 'a file `lightworker export` wrote')
    .option('--dry-run', 'check the file and say what would be imported, changing nothing')
    .option('--json')
    .action(async (file: string, o, cmd: Command) => {
      const r = (await withEngine(cmd, (call) => call('import_trees', { file: resolve(file), dry_run: Boolean(o.dryRun) }))) as ImportReport;
      if (o.json) return printJson(r);
      for (const s of r.skipped) out(`skipped  ${s.rootId}  ${s.reason}`);
      for (const t of r.imported) out(`${r.applied ? 'imported' : 'would import'}  ${t.rootId}  ${t.tasks} task(s), ${t.events} events`);
      out(`${r.applied ? 'imported' : 'would import'} ${r.imported.length} tree(s), skipped ${r.skipped.length}${r.artifacts ? ` (${r.artifacts} artifact files listed; their contents stay in the source home)` : ''}`);
    });
}
