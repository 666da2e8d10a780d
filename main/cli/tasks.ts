import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { AppError } from '../core/errors.js';
import type { CustodySummary, TreeNode, VerificationSummary } from '../commands/tasks.js';
import { STATUSES, type Task } from '../tasks/types.js';
import type { NeedsInput } from '../tasks/summary.js';
import { formatBudget, formatRootBudget, type BudgetView } from '../tasks/budget-spend.js';
import { RETRY_STRATEGIES } from '../tasks/ops.js';
import { formatRoute, type RouteRecord } from '../workers/route-record.js';
import { collect, splitList, withEngine } from './context.js';
import { ago, err, out, printJson, table } from './output.js';
import { verificationLines } from './verification.js';
import { resolveSubmitWorkspace } from './workspace-note.js';

/** A commander parser for an integer option; bad input names the option (exit 2). */
export function parseIntOption(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n)) throw new AppError('invalid_input', `${name}: expected an integer, got "${v}"`, { field: name });
    return n;
  };
}

export function parseJsonOption(name: string) {
  return (v: string) => {
    try {
      return JSON.parse(v);
    } catch {
      throw new AppError('invalid_input', `${name}: not valid JSON`, { field: name });
    }
  };
}

function taskLine(t: Task): string[] {
  return [t.id, t.status, t.kind, t.worker, ago(t.createdAt), t.name];
}

export function printTask(t: Task & { waitingOn?: string[]; waitingFor?: string; needs?: NeedsInput; rerouted?: string }, verification?: VerificationSummary | null, route?: RouteRecord | null, custody: CustodySummary[] = [], budget?: Parameters<typeof formatBudget>[0] & Pick<BudgetView, 'root'>): void {
  const lines = [
    `${t.id}  ${t.status}${t.waitingOn?.length ? ` (waiting on approval of ${t.waitingOn.join(', ')})` : ''}`,
    ...(t.waitingFor ? [`waiting:    ${t.waitingFor}`] : []),
    ...(t.rerouted ? [`rerouted:   ${t.rerouted}`] : []),
    ...(t.needs ? [`needs:      ${t.needs.kind} — ${t.needs.asks}  (lightworker answer ${t.id} ${t.needs.kind === 'permission' ? '--allow | --deny' : t.needs.kind === 'budget' ? '--allow [new limit] | --deny' : '"…"'})`] : []),
    `name:       ${t.name}`,
    `kind:       ${t.kind}   mode: ${t.mode}   worker: ${t.worker}${t.model ? `   model: ${t.model}` : ''}${t.reasoningEffort ? `   effort: ${t.reasoningEffort}` : ''}${t.gateway ? `   gateway: ${t.gateway}` : ''}`,
    `workspace:  ${t.workspace}${t.baseRef ? ` @ ${t.baseRef}` : ''}`,
    `priority:   ${t.priority}   timeout: ${t.timeoutS}s   attempt: ${t.attempt}`,
  ];
  if (t.dependsOn.length) lines.push(`depends on: ${t.dependsOn.join(', ')}`);
  if (t.worktreePath) lines.push(`worktree:   ${t.worktreePath} (${t.branch})`);
  if (route) lines.push(`route:      ${formatRoute(route)}`);
  if (t.usage.inputTokens || t.usage.outputTokens) {
    lines.push(`usage:      ${t.usage.inputTokens} in (${t.usage.cachedTokens} cached), ${t.usage.outputTokens} out${t.usage.costUsd !== null ? `, $${t.usage.costUsd.toFixed(4)}` : ''}`);
  }
  if (budget) lines.push(`budget:     ${formatBudget(budget)}   (spent/limit)`);
  if (budget?.root) lines.push(`tree:       ${formatRootBudget(budget.root)}   (tree ${budget.root.id}, spent/limit)`);
  if (t.error) lines.push(`error:      ${t.error.code}: ${t.error.message}`);
  for (const c of custody) {
    const paths = c.restored.map((r) => r.path);
    lines.push(`custody:    put back ${c.count} item(s) of ${c.repo} after attempt ${c.attempt}: ${paths.slice(0, 12).join(', ')}${paths.length > 12 ? ', …' : ''}`);
    lines.push(`            what was found is kept in ${c.artifact}${c.failed?.length ? `; could not put back: ${c.failed.map((f) => `${f.path} (${f.error})`).join(', ')}` : ''}`);
  }
  lines.push('objective:', ...t.objective.split('\n').map((l) => `  ${l}`));
  if (t.verify.length) lines.push('verify:', ...t.verify.map((v) => `  ${Array.isArray(v) ? JSON.stringify(v) : v}`));
  if (verification) lines.push(...verificationLines(verification));
  if (t.result !== null) lines.push(`result${t.schemaValid === false ? ' (not schema-valid)' : ''}:`, ...JSON.stringify(t.result, null, 2).split('\n').map((l) => `  ${l}`));
  out(lines.join('\n'));
}

export function printTree(nodes: TreeNode[], indent = ''): void {
  for (const n of nodes) {
    out(`${indent}${n.id}  ${n.status.padEnd(17)} ${n.kind.padEnd(7)} ${n.name}${n.dependsOn.length ? `  ← ${n.dependsOn.join(', ')}` : ''}`);
    printTree(n.children, indent + '  ');
  }
}

export function registerTaskCommands(program: Command): void {
  addBudgetOptions(program.command('submit'))
    .description('queue a task (or a batch with --batch FILE)')
    .argument('[objective...]', 'what the worker should do')
    .option('--objective-file <file>', 'read the objective from a file')
    .option('--batch <file>', 'a JSON file {"tasks":[…]} queued all-or-nothing')
    .addOption(new Option('-k, --kind <kind>', 'plan | explore | review | execute').choices(['plan', 'explore', 'review', 'execute']))
    .option('-w, --workspace <dir>', 'git repository to work in (default: current directory; a subfolder means its repository)')
    .option('--subfolder', 'from a subfolder of a repository: keep the change inside that subfolder')
    .option('-n, --name <name>', 'short name')
    .option('--worker <name>', 'worker CLI (mock, codex, claude-code, opencode, vscode, or a linked one)')
    .option('--model <model>')
    .addOption(new Option('--effort <effort>', 'reasoning effort').choices(['low', 'medium', 'high', 'xhigh']))
    .option('--profile <name>')
    .option('--gateway <name>')
    .addOption(new Option('--mode <mode>').choices(['plan_only', 'auto_readonly', 'auto_execute']))
    .addOption(new Option('--type <type>', 'workflow type').choices(['chore', 'feature', 'hotfix', 'refactor']))
    .option('--priority <n>', '0–100', parseIntOption('priority'))
    .option('--timeout <seconds>', 'hard timeout', parseIntOption('timeout'))
    .option('--base-ref <ref>', 'git ref the worktree starts from')
    .option('--depends-on <ids>', 'comma-separated task ids')
    .option('--verify <command>', 'verification command (repeatable; a JSON array is taken as argv)', collect)
    .option('--allowed-path <glob>', 'path the task may change (repeatable)', collect)
    .option('--criteria <text>', 'success criterion (repeatable)', collect)
    .option('--context-pack <name>')
    .option('--metadata <json>', 'worker-specific settings as JSON', parseJsonOption('metadata'))
    .option('--parent <id>', 'parent task id')
    .option('--review-by <worker>', 'also queue a read-only review of the change by this worker (execute task)')
    .option('--request-id <id>', 'your id for this submission (e.g. a UUID): running the same command again with it returns the first run\'s tasks instead of queueing them twice')
    .option('--json', 'print the created task(s) as JSON')
    .action(async (words: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call, ctx) => {
        if (o.batch) {
          const text = readOptionFile('batch', o.batch);
          let batch: unknown;
          try {
            batch = JSON.parse(text);
          } catch (e) {
            throw new AppError('invalid_input', `--batch: ${o.batch} is not JSON: ${(e as Error).message}`, { field: 'batch' });
          }
          const r = await call('delegate_batch', o.requestId ? { ...(batch as object), client_request_id: o.requestId } : batch);
          if (r.replayed && !o.json) err(`--request-id ${o.requestId}: already submitted; these are the tasks of that first submission (nothing new was queued)`);
          if (o.json) printJson(r);
          else out(table(['ID', 'STATUS', 'KIND', 'WORKER', 'CREATED', 'NAME'], r.tasks.map(taskLine)));
          await hintWhenNothingRuns(call, r.tasks);
          return;
        }
        const objective = o.objectiveFile ? readOptionFile('objective-file', o.objectiveFile) : words.join(' ');
        const place = resolveSubmitWorkspace(o.workspace ?? process.cwd(), { subfolder: Boolean(o.subfolder), allowedPaths: o.allowedPath }, ctx.engine.config);
        if (place.note) err(place.note);
        const input = {
          objective,
          kind: o.kind,
          workspace: place.workspace,
          name: o.name,
          worker: o.worker,
          model: o.model,
          reasoning_effort: o.effort,
          profile: o.profile,
          gateway: o.gateway,
          mode: o.mode,
          type: o.type,
          priority: o.priority,
          timeout_s: o.timeout,
          base_ref: o.baseRef,
          depends_on: splitList(o.dependsOn),
          verify: (o.verify as string[] | undefined)?.map((v) => (v.trim().startsWith('[') ? parseJsonOption('verify')(v) : v)),
          allowed_paths: place.allowedPaths ?? o.allowedPath,
          success_criteria: o.criteria,
          context_pack: o.contextPack,
          metadata: o.metadata,
          parent_id: o.parent,
          budget: budgetOf(o),
          client_request_id: o.requestId,
        };
        // --review-by: the execute task plus a review task chained on it (main/commands/orchestration.ts).
        const r = o.reviewBy ? await call('delegate_reviewed', { ...input, kind: 'execute', review_by: o.reviewBy }) : await call('delegate_task', input);
        if (r.replayed && !o.json) err(`--request-id ${o.requestId}: already submitted; these are the tasks of that first submission (nothing new was queued)`);
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}${r.task.status === 'awaiting_approval' ? `  (approve with: lightworker approve ${r.task.id})` : ''}`);
        if (r.review && !o.json) out(`${r.review.id}  ${r.review.status}  (review by ${r.review.worker})`);
        await hintWhenNothingRuns(call, [r.task]);
      });
    });

  program
    .command('tasks')
    .description('list tasks, newest first')
    .option('-s, --status <list>', `comma-separated: ${STATUSES.join(', ')}`)
    .option('--search <text>')
    .option('--root <id>', 'only this tree')
    .option('--limit <n>', 'at most this many', parseIntOption('limit'), 100)
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('list_tasks', { status: splitList(o.status), search: o.search, root_id: o.root, limit: o.limit, detail: true });
        if (o.json) printJson(r);
        else if (!r.tasks.length) out('no tasks');
        else out(table(['ID', 'STATUS', 'KIND', 'WORKER', 'CREATED', 'NAME'], r.tasks.map(taskLine)));
      });
    });

  program
    .command('show')
    .description('one task in full')
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('get_task', { id });
        if (o.json) printJson(r);
        else printTask(r.task, r.verification, r.route, r.custody, r.budget);
      });
    });

  program
    .command('tree')
    .description("the tree a task belongs to")
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('get_task_tree', { id });
        if (o.json) printJson(r);
        else printTree(r.roots);
      });
    });

  program
    .command('approve')
    .description('approve tasks awaiting a person')
    .argument('<ids...>', 'task ids (or unique prefixes of 6+ characters)')
    .option('--json')
    .action(async (ids: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const tasks = [];
        for (const id of ids) tasks.push((await call('approve_task', { id })).task);
        if (o.json) printJson({ tasks });
        else for (const t of tasks) out(`${t.id}  ${t.status}`);
      });
    });

  program
    .command('cancel')
    .description('cancel tasks (running ones are killed with their whole process tree)')
    .argument('<ids...>', 'task ids (or unique prefixes of 6+ characters)')
    .option('--reason <text>')
    .option('--json')
    .action(async (ids: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const tasks = [];
        for (const id of ids) tasks.push((await call('cancel_task', { id, reason: o.reason })).task);
        if (o.json) printJson({ tasks });
        else for (const t of tasks) out(`${t.id}  ${t.cancelRequested && t.status !== 'cancelled' ? `${t.status} (cancel requested)` : t.status}`);
      });
    });

  program
    .command('retry')
    .description('run an ended task again as a new attempt')
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .addOption(new Option('--strategy <s>', 'same | fallback_gateway | deeper_profile | resume (continue an interrupted run in its session and worktree)').choices([...RETRY_STRATEGIES]).default('same'))
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('retry_task', { id, strategy: o.strategy });
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}  attempt ${r.task.attempt}`);
      });
    });
}

/**
 * "queued" promises a run; when no process holds the scheduler lease nothing will start it, so say how
 * (on stderr, so `submit`'s stdout stays one parsable line).
 */
async function hintWhenNothingRuns(call: (name: string, input?: unknown) => Promise<unknown>, tasks: Task[]): Promise<void> {
  if (!tasks.some((t) => t.status === 'queued')) return;
  const status = (await call('scheduler_status', {})) as { leader: unknown };
  if (!status.leader) err('queued — no scheduler is running; start one with `lightworker run` (or `serve`)');
}

/** The text of a file named by `--<flag>`, or `invalid_input` naming the flag, the path and why. */
function readOptionFile(flag: string, path: string): string {
  const full = resolve(path);
  try {
    return readFileSync(full, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file' : err.code === 'EISDIR' ? 'is a directory' : err.code === 'EACCES' ? 'permission denied' : err.message;
    throw new AppError('invalid_input', `--${flag}: cannot read ${full}: ${why}`, { field: flag, path: full });
  }
}

/**
 * `--max-concurrency/--max-attempts/--max-retries`: the budget of the task tree a submit or orchestrate creates;
 * `--max-tokens/--max-cost-usd/--max-turns/--max-wall-s`: what each of its tasks may spend (over config [budgets]);
 * `--root-max-tokens/--root-max-cost-usd/--root-max-turns`: what the whole tree may spend, its tasks summed.
 */
export function addBudgetOptions(cmd: Command): Command {
  return cmd
    .option('--max-concurrency <n>', "tasks of this tree running at once (default scheduler.per_root)", parseIntOption('max-concurrency'))
    .option('--max-attempts <n>', 'attempts each task of this tree may make', parseIntOption('max-attempts'))
    .option('--max-retries <n>', 'retries the whole tree may spend (default limits.retry_budget)', parseIntOption('max-retries'))
    .option('--max-tokens <n>', 'tokens (input + output) each task may spend over its attempts (default budgets.max_tokens)', parseIntOption('max-tokens'))
    .option('--max-cost-usd <usd>', 'USD each task may spend (default budgets.max_cost_usd)', parseNumberOption('max-cost-usd'))
    .option('--max-turns <n>', 'worker turns each task may take, auto-repairs and follow-ups included (default budgets.max_turns)', parseIntOption('max-turns'))
    .option('--max-wall-s <seconds>', 'seconds each task may run over its attempts (default budgets.max_wall_s)', parseIntOption('max-wall-s'))
    .option('--root-max-tokens <n>', 'tokens the whole tree may spend, its tasks summed (default budgets.root_max_tokens)', parseIntOption('root-max-tokens'))
    .option('--root-max-cost-usd <usd>', 'USD the whole tree may spend (default budgets.root_max_cost_usd)', parseNumberOption('root-max-cost-usd'))
    .option('--root-max-turns <n>', 'worker turns the whole tree may take (default budgets.root_max_turns)', parseIntOption('root-max-turns'));
}

type BudgetOptions = { maxConcurrency?: number; maxAttempts?: number; maxRetries?: number; maxTokens?: number; maxCostUsd?: number; maxTurns?: number; maxWallS?: number; rootMaxTokens?: number; rootMaxCostUsd?: number; rootMaxTurns?: number };

/** The `budget` input from those options, or undefined when none was given. */
export function budgetOf(o: BudgetOptions): Record<string, number | undefined> | undefined {
  const b = { concurrency: o.maxConcurrency, attempts: o.maxAttempts, retries: o.maxRetries, max_tokens: o.maxTokens, max_cost_usd: o.maxCostUsd, max_turns: o.maxTurns, max_wall_s: o.maxWallS, root_max_tokens: o.rootMaxTokens, root_max_cost_usd: o.rootMaxCostUsd, root_max_turns: o.rootMaxTurns };
  return Object.values(b).some((v) => v !== undefined) ? b : undefined;
}

function parseNumberOption(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || !v.trim()) throw new AppError('invalid_input', `${name}: expected a number, got "${v}"`, { field: name });
    return n;
  };
}
