import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { addBudgetOptions, budgetOf } from './tasks.js';
import { AppError } from '../core/errors.js';
import type { CandidateReport } from '../orchestration/compare.js';
import type { ClientSnippet } from '../commands/mcp-config.js';
import { MCP_CLIENTS } from '../commands/mcp-config.js';
import { collect, globals, splitList, withEngine } from './context.js';
import { err, out, printJson, table } from './output.js';
import { createStatusLine } from './progress.js';
import { seconds } from './scheduler.js';
import { printTree } from './tasks.js';
import { waitForTree } from './waiting.js';

/** `--wait`, `--timeout` and `--quiet` of a command that queues a tree and may follow it to the end. */
function addWaitOptions(cmd: Command, what: string): Command {
  return cmd
    .option('--wait', `stay until ${what} has ended (or needs approval), with a live status line on stderr`)
    .option('--timeout <seconds>', 'with --wait: give up after this long (exit 1)', seconds('timeout'), 3600)
    .option('-q, --quiet', 'with --wait: no status line');
}

function jsonOption(name: string) {
  return (v: string) => {
    try {
      return JSON.parse(v);
    } catch {
      throw new AppError('invalid_input', `${name}: not valid JSON`, { field: name });
    }
  };
}

/** `lightworker mcp`, `mcp-config`, `orchestrate`, `compare`. */
export function registerMcpCommands(program: Command): void {
  program
    .command('mcp')
    .description('serve MCP on stdin/stdout for agent clients (Codex, Claude Code, Cursor, …)')
    .addOption(new Option('--permission-for <task>', "serve only Claude Code's permission prompts of this task's turn (started by the runner)").hideHelp())
    .action(async (o: { permissionFor?: string }, cmd: Command) => {
      if (o.permissionFor) {
        const { runPermissionServer } = await import('../mcp/permission-server.js');
        await runPermissionServer({ home: globals(cmd).home, taskId: o.permissionFor });
        return;
      }
      // Loaded here so other commands do not pay for the SDK.
      const { runStdioServer } = await import('../mcp/stdio.js');
      await runStdioServer({ home: globals(cmd).home });
    });

  program
    .command('mcp-config')
    .description('print a paste-ready MCP client configuration (snippet on stdout, notes on stderr)')
    .addOption(new Option('--client <client>', MCP_CLIENTS.join(' | ')).choices([...MCP_CLIENTS]).makeOptionMandatory())
    .addOption(new Option('--launch <layout>', 'auto | source | packaged').choices(['auto', 'source', 'packaged']).default('auto'))
    .option('--name <name>', 'server name in the client', 'lightworker')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('mcp_config', { client: o.client, launch: o.launch, name: o.name })) as ClientSnippet;
        if (o.json) return printJson(r);
        process.stdout.write(r.snippet);
        for (const n of r.notes) err(`# ${n}`);
      });
    });

  addBudgetOptions(addWaitOptions(program
    .command('orchestrate'), 'the planner and every task of its plan'))
    .description('queue a planner that splits a goal into a task DAG')
    .argument('<goal...>')
    .option('-w, --workspace <dir>', 'git repository (default: current directory)')
    .addOption(new Option('--mode <mode>').choices(['plan_only', 'auto_readonly', 'auto_execute']))
    .option('--worker <name>', 'worker of the planner')
    .addOption(new Option('--effort <effort>').choices(['low', 'medium', 'high', 'xhigh']))
    .option('--context-pack <name>')
    .option('--metadata <json>', 'worker-specific settings as JSON', jsonOption('metadata'))
    .option('--request-id <id>', 'your id for this goal (e.g. a UUID): running the same command again with it returns the first run\'s tasks instead of queueing them twice')
    .option('--json')
    .action(async (words: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call, ctx) => {
        const r = await call('orchestrate_goal', {
          client_request_id: o.requestId,
          goal: words.join(' '),
          workspace: resolve(o.workspace ?? process.cwd()),
          mode: o.mode,
          worker: o.worker,
          reasoning_effort: o.effort,
          context_pack: o.contextPack,
          metadata: o.metadata,
          budget: budgetOf(o),
        });
        if (!o.wait) {
          if (o.json) printJson(r);
          else out(`${r.task.id}  ${r.task.status}  (planner; its plan becomes child tasks — follow with: lightworker tree ${r.task.id})`);
          return;
        }
        if (!o.json) out(`${r.task.id}  ${r.task.status}  (planner; waiting for it and its plan)`);
        const waited = await waitForTree(ctx.engine, call, r.task.id, o.timeout * 1000, createStatusLine({ quiet: o.quiet }), 'goal');
        const tree = await call('get_task_tree', { id: r.task.id });
        if (o.json) printJson({ ...r, wait: { reason: waited.reason, counts: waited.counts }, tree });
        else {
          out(`${waited.reason}`);
          printTree(tree.roots);
        }
        if (waited.reason === 'timeout') process.exitCode = 1;
      });
    });

  addWaitOptions(program
    .command('compare'), 'every candidate (and review)')
    .description('run one objective on several workers in separate worktrees; --show ID reports them side by side')
    .argument('[objective...]')
    .option('--workers <list>', 'comma-separated workers, e.g. codex,claude-code')
    .option('--review-by <worker>', 'chain a read-only review of each candidate by this worker')
    .option('--show <id>', 'report an existing comparison (any of its task ids)')
    .option('-w, --workspace <dir>', 'git repository (default: current directory)')
    .addOption(new Option('--mode <mode>').choices(['plan_only', 'auto_readonly', 'auto_execute']))
    .addOption(new Option('--type <type>').choices(['chore', 'feature', 'hotfix', 'refactor']))
    .option('--verify <command>', 'verification command (repeatable)', collect)
    .option('--criteria <text>', 'success criterion (repeatable)', collect)
    .option('--base-ref <ref>')
    .option('--metadata <json>', 'worker-specific settings as JSON', jsonOption('metadata'))
    .option('--json')
    .action(async (words: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call, ctx) => {
        const report = async (id: string) => {
          const r = await call('compare_report', { id });
          if (o.json) return printJson(r);
          out(renderComparison(r.candidates));
          for (const c of r.candidates as CandidateReport[]) {
            const diff = (c.diff as { diff?: string; note?: string | null } | null)?.diff;
            if (!diff) continue;
            const lines = diff.split('\n');
            out(`\n== ${c.worker} (${c.id})\n${lines.slice(0, 200).join('\n')}${lines.length > 200 ? `\n… ${lines.length - 200} more lines (lightworker diff ${c.id})` : ''}`);
          }
        };
        if (o.show) return report(o.show);
        const workers = splitList(o.workers);
        if (!workers?.length) throw new AppError('invalid_input', 'workers: give --workers a,b', { field: 'workers' });
        const r = await call('compare_workers', {
          objective: words.join(' '),
          workspace: resolve(o.workspace ?? process.cwd()),
          workers,
          review_by: o.reviewBy,
          mode: o.mode,
          type: o.type,
          verify: o.verify,
          success_criteria: o.criteria,
          base_ref: o.baseRef,
          metadata: o.metadata,
        });
        if (o.wait) {
          const waited = await waitForTree(ctx.engine, call, r.candidates[0].id, o.timeout * 1000, createStatusLine({ quiet: o.quiet }), 'compare');
          if (waited.reason === 'timeout') process.exitCode = 1;
          if (!o.json) out(`${waited.reason}`);
          return report(r.rootId);
        }
        if (o.json) return printJson(r);
        const rows = [...r.candidates, ...r.reviews].map((t: { id: string; status: string; kind: string; worker: string }) => [t.id, t.status, t.kind, t.worker]);
        out(table(['ID', 'STATUS', 'KIND', 'WORKER'], rows));
        out(`report: lightworker compare --show ${r.rootId}`);
      });
    });
}

function renderComparison(cs: CandidateReport[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'string' ? v : JSON.stringify(v));
  const diffStat = (d: unknown) => {
    if (!d || typeof d !== 'object') return '-';
    const o = d as Record<string, unknown>;
    const files = (o.files ?? o.changedFiles) as unknown[] | undefined;
    return Array.isArray(files) ? `${files.length} files` : cell(o.stat ?? o.summary ?? '(see --json)');
  };
  const rows = cs.map((c) => [
    c.worker,
    c.id,
    c.status,
    c.durationMs === null ? '-' : `${Math.round(c.durationMs / 1000)}s`,
    `${c.usage.inputTokens}/${c.usage.outputTokens}`,
    diffStat(c.diff),
    c.verification ? (c.verification.ok ? 'passed' : 'FAILED') : '-',
    c.review ? `${c.review.status}` : '-',
    c.error ? `${c.error.code}: ${c.error.message}` : '',
  ]);
  return table(['WORKER', 'TASK', 'STATUS', 'TIME', 'TOKENS IN/OUT', 'DIFF', 'VERIFIED', 'REVIEW', 'ERROR'], rows);
}
