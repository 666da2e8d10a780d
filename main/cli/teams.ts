import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import type { TeamReport } from '../orchestration/team-report.js';
import type { Task } from '../tasks/types.js';
import { collect, splitList, withEngine } from './context.js';
import { out, printJson, table } from './output.js';
import { addBudgetOptions, budgetOf, parseIntOption, parseJsonOption } from './tasks.js';

/** Options every strategy that has an objective shares (the member tasks' common fields). */
function withTaskOptions(c: Command): Command {
  return addBudgetOptions(c)
    .argument('<objective...>', 'what the team should do')
    .option('-w, --workspace <dir>', 'git repository to work in (default: current directory)')
    .option('-n, --name <name>', 'short name of the team')
    .option('--verify <command>', 'verification command LightWorker runs (repeatable; a JSON array is argv)', collect)
    .option('--allowed-path <glob>', 'path the change may touch (repeatable)', collect)
    .option('--criteria <text>', 'success criterion (repeatable)', collect)
    .addOption(new Option('--mode <mode>').choices(['plan_only', 'auto_readonly', 'auto_execute']))
    .addOption(new Option('--effort <effort>', 'reasoning effort').choices(['low', 'medium', 'high', 'xhigh']))
    .option('--base-ref <ref>', 'git ref the worktrees start from')
    .option('--gateway <name>', 'model gateway (config.toml [gateways.NAME]) for every member')
    .option('--priority <n>', '0–100', parseIntOption('priority'))
    .option('--timeout <seconds>', 'hard timeout per task', parseIntOption('timeout'))
    .option('--metadata <json>', 'worker-specific settings for every member, as JSON', parseJsonOption('metadata'))
    .option('--request-id <id>', 'your id for this team (e.g. a UUID): running the same command again with it returns the first run\'s tasks instead of starting a second team')
    .option('--json', 'print the created tasks as JSON');
}

/** Commander's parsed options: values as the option definitions above make them. */
type Opts = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- commander types options loosely

function taskFields(words: string[], o: Opts): Record<string, unknown> {
  return {
    objective: words.join(' '),
    workspace: resolve(o.workspace ?? process.cwd()),
    name: o.name,
    verify: (o.verify as string[] | undefined)?.map((v) => (v.trim().startsWith('[') ? parseJsonOption('verify')(v) : v)),
    allowed_paths: o.allowedPath,
    success_criteria: o.criteria,
    mode: o.mode,
    reasoning_effort: o.effort,
    base_ref: o.baseRef,
    gateway: o.gateway,
    priority: o.priority,
    timeout_s: o.timeout,
    metadata: o.metadata,
    client_request_id: o.requestId,
    budget: budgetOf(o),
  };
}

function printCreated(r: { strategy: string; rootId: string; tasks: Task[] }, json: boolean): void {
  if (json) return printJson(r);
  out(`team ${r.strategy}  root ${r.rootId}`);
  out(table(['ID', 'STATUS', 'KIND', 'WORKER', 'NAME'], r.tasks.map((t) => [t.id, t.status, t.kind, t.worker, t.name])));
  out(`follow it with \`lightworker team show ${r.rootId}\` or \`lightworker tree ${r.rootId}\``);
}

function printReport(r: TeamReport): void {
  out(`team ${r.strategy}  root ${r.rootId}  state: ${r.state}`);
  out(table(['ID', 'ROLE', 'ROUND', 'WORKER', 'STATUS', 'ATTEMPT', 'DIFF LINES', 'VERDICT'], r.members.map((m) => [m.id, m.role, m.round ?? '', m.worker, m.status, m.attempt, m.diffLines ?? '', m.verdict ?? (m.noVerdict ? 'NO VALID VERDICT' : (m.error?.code ?? ''))].map(String))));
  for (const m of r.members) if (m.noVerdict) out(`review ${m.id}: ${m.noVerdict}`);
  if (r.outcome) out(`outcome: ${JSON.stringify(r.outcome)}`);
  for (const c of r.conflicts as { file: string; source: string; clashesWith: string[] }[]) out(`conflict: ${c.file} (${c.source}${c.clashesWith.length ? ` vs ${c.clashesWith.join(', ')}` : ''})`);
  out(r.acceptable ? `accept with: lightworker team accept ${r.rootId}  (takes ${r.acceptable})` : 'nothing to accept yet');
}

/** `lightworker team <strategy> …` and the commands that follow a team. */
export function registerTeamCommands(program: Command): void {
  const team = program.command('team').description('run a team of workers as one task tree (implement_review, map_reduce, best_of_n, integrate, handoff)');
  const start = (strategy: string, extra: (o: Opts) => Record<string, unknown>) => async (words: string[], o: Opts, cmd: Command) => {
    await withEngine(cmd, async (call) => printCreated(await call('start_team', { strategy, ...taskFields(words, o), ...extra(o) }), Boolean(o.json)));
  };

  withTaskOptions(team.command('implement_review').description('an execute task, reviewed by another worker; findings go back to the implementer while rounds remain'))
    .requiredOption('--workers <implementer,reviewer>', 'two workers: the implementer, then the reviewer')
    .option('--rounds <n>', 'most review rounds (default 2)', parseIntOption('rounds'))
    .action(start('implement_review', (o) => ({ workers: splitList(o.workers), rounds: o.rounds })));

  withTaskOptions(team.command('map_reduce').description('N contributors, then a synthesizer that sees all their results'))
    .requiredOption('--workers <list>', 'contributors\' workers (cycled over --part)')
    .option('--part <text>', 'one contributor\'s sub-objective (repeatable)', collect)
    .option('--synthesizer <worker>', 'worker of the synthesis (default: the first worker)')
    .addOption(new Option('--contribute <kind>', 'contributors read (explore) or change code (execute)').choices(['explore', 'execute']))
    .action(start('map_reduce', (o) => ({ workers: splitList(o.workers), parts: o.part, synthesizer: o.synthesizer, contribute: o.contribute })));

  withTaskOptions(team.command('best_of_n').description('N candidates in separate worktrees, verified, then ranked; `team accept` takes the winner'))
    .requiredOption('--workers <list>', 'candidates: worker or worker:model, comma-separated')
    .option('--judge <rule|worker>', '"rule" (verified first, then smallest diff) or a worker that ranks them', 'rule')
    .action(start('best_of_n', (o) => ({ workers: splitList(o.workers), judge: o.judge })));

  team
    .command('integrate')
    .description('merge several verified tasks\' commits onto one new branch (3-way), verify, report conflicts per file')
    .argument('<ids...>', 'execute task ids, merged in this order')
    .option('-n, --name <name>')
    .option('-w, --workspace <dir>', 'the sources\' repository (default: theirs)')
    .option('--verify <command>', 'verification command (repeatable; default: the sources\' own)', collect)
    .addOption(new Option('--mode <mode>').choices(['plan_only', 'auto_readonly', 'auto_execute']))
    .option('--json')
    .action(async (ids: string[], o, cmd: Command) => {
      await withEngine(cmd, async (call) => printCreated(await call('start_team', { strategy: 'integrate', sources: ids, name: o.name, workspace: o.workspace && resolve(o.workspace), verify: o.verify, mode: o.mode }), Boolean(o.json)));
    });

  team
    .command('handoff')
    .description('continue an ended task on another worker, in the same worktree, with a summary of its last attempt')
    .argument('<id>', 'task id (or a unique prefix of 6+ characters)')
    .requiredOption('--worker <name>', 'the worker that takes over')
    .option('--note <text>', 'a note for the next worker')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('handoff_task', { id, worker: o.worker, note: o.note });
        if (o.json) printJson(r);
        else out(`${r.task.id}  ${r.task.status}  attempt ${r.task.attempt}  worker ${r.task.worker}`);
      });
    });

  team
    .command('show')
    .description("a team's members, state and outcome")
    .argument('<id>', 'any task of the team')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('team_report', { id });
        if (o.json) printJson(r);
        else printReport(r);
      });
    });

  team
    .command('cancel')
    .description('cancel every task of the team that has not ended (running ones are killed)')
    .argument('<id>', 'any task of the team')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('cancel_team', { id });
        if (o.json) printJson(r);
        else out(r.cancelled.length ? `cancel requested for ${r.cancelled.join(', ')}` : 'nothing left to cancel');
      });
    });

  team
    .command('accept')
    .description("accept the team's result (the reviewed change, the winner, the synthesis or the integration)")
    .argument('<id>', 'any task of the team')
    .option('--branch <name>', 'commit onto this branch instead of the checked-out one')
    .option('--unverified', 'accept a result that had no verify commands')
    .option('--pr', 'instead of a local commit: push the result and open one pull request (--branch names the remote branch)')
    .option('--ready', 'with --pr: ready for review instead of a draft')
    .option('--json')
    .action(async (id: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        if (o.pr) {
          const p = await call('open_pull_request', { id, team: true, branch: o.branch, unverified: Boolean(o.unverified), ...(o.ready ? { draft: false } : {}) });
          if (o.json) printJson(p);
          else out(`opened #${p.pull.number} ${p.pull.url}  (${p.pull.branch} → ${p.pull.base}, for ${p.pull.taskId})`);
          return;
        }
        const r = await call('accept_team', { id, branch: o.branch, unverified: Boolean(o.unverified) });
        if (o.json) printJson(r);
        else out(`accepted ${r.accepted}  ${r.commit ?? '(no changes)'} on ${r.branch}  (${r.files.length} files)`);
      });
    });
}
