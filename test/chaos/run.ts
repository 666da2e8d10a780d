// `npm run chaos -- --store postgres [--kills N --freezes N --cuts N --server-restarts N --full-disks N --disk-mb N --seed S --full --out FILE]`
// runs only the PostgreSQL fleet scenario (fleet-pg.ts) and writes docs/reliability-postgres.md.
// `npm run chaos [-- --kills N --mcp N --mcp-clients N --http N --seed S --leaders K --schedulers K --task-timeout S --custody N --damage-tasks N --escape-rounds N --flood-mb N --guards N --out FILE]`
// Drives the real CLI and MCP server through leader kills, competing schedulers, MCP and HTTP fuzz and a
// secret corpus; prints the figures and writes them to docs/reliability.md (`--out -` writes nothing).
// Exit 1 when any figure that must be zero is not.
import { cpus } from 'node:os';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { killAllLabs } from './lab.js';
import { DEFAULTS, FLEET_DEFAULTS, FLEET_FULL, passed, renderFleetTable, renderNotes, renderTable, runChaos, runFleetChaos, type ChaosOptions, type ChaosReport, type FleetChaosReport } from './suite.js';
import { killAllFleets, type FleetPgOptions } from './fleet-pg.js';

const FLAGS: Record<string, keyof typeof DEFAULTS> = {
  '--kills': 'kills',
  '--leaders': 'leaders',
  '--schedulers': 'schedulers',
  '--mcp': 'mcp',
  '--mcp-clients': 'mcpClients',
  '--http': 'http',
  '--accept-kills': 'acceptKills',
  '--escape-rounds': 'escapeRounds',
  '--seed': 'seed',
  '--task-timeout': 'taskTimeoutS',
  '--custody': 'custody',
  '--damage-tasks': 'damageTasks',
  '--flood-mb': 'floodMb',
  '--guards': 'guards',
};

function parseArgs(argv: string[]): { options: Omit<ChaosOptions, 'log'>; out: string } {
  const options = { ...DEFAULTS };
  let out = fileURLToPath(new URL('../../docs/reliability.md', import.meta.url));
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--out') {
      out = value;
      continue;
    }
    const key = FLAGS[flag];
    const n = Number(value);
    if (!key || value === undefined || !Number.isInteger(n) || n < 0) {
      process.stderr.write(`usage: npm run chaos -- [${[...Object.keys(FLAGS), '--out'].join(' N | ')} FILE]\n(bad argument: ${flag} ${value ?? ''})\n`);
      process.exit(2);
    }
    options[key] = n;
  }
  options.leaders = Math.max(2, options.leaders);
  return { options, out };
}

const FLEET_FLAGS: Record<string, keyof typeof FLEET_DEFAULTS> = { '--kills': 'kills', '--freezes': 'freezes', '--cuts': 'cuts', '--server-restarts': 'serverRestarts', '--full-disks': 'fullDisks', '--disk-mb': 'diskMb', '--seed': 'seed' };

function parseFleetArgs(argv: string[]): { options: Omit<FleetPgOptions, 'log'>; out: string } {
  const options = { ...FLEET_DEFAULTS, ...(argv.includes('--full') ? FLEET_FULL : {}) };
  let out = fileURLToPath(new URL('../../docs/reliability-postgres.md', import.meta.url));
  const rest = argv.filter((a) => a !== '--full');
  for (let i = 0; i < rest.length; i += 2) {
    const [flag, value] = [rest[i], rest[i + 1]];
    if (flag === '--store') continue;
    if (flag === '--out' && value !== undefined) {
      out = value;
      continue;
    }
    const key = FLEET_FLAGS[flag];
    const n = Number(value);
    if (!key || value === undefined || !Number.isInteger(n) || n < 0) {
      process.stderr.write(`usage: npm run chaos -- --store postgres [${Object.keys(FLEET_FLAGS).join(' N | ')} N | --full | --out FILE]\n(bad argument: ${flag} ${value ?? ''})\n`);
      process.exit(2);
    }
    options[key] = n;
  }
  return { options, out };
}

function renderFleetDoc(r: FleetChaosReport): string {
  const o = r.options;
  const verdict = passed(r) ? 'PASS: every figure that must be zero is zero.' : `FAIL: ${Object.entries(r.failures).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(', ')}.`;
  return `# Reliability figures: the PostgreSQL fleet

Produced by \`npm run chaos -- --store postgres --kills ${o.kills} --freezes ${o.freezes} --cuts ${o.cuts} --server-restarts ${o.serverRestarts} --full-disks ${o.fullDisks} --disk-mb ${o.diskMb} --seed ${o.seed}\` on
${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (${cpus().length} cores, Node ${process.version}, ${r.durationS} s). ${verdict}

${renderFleetTable(r)}

Bold figures must be 0; the command exits non-zero otherwise. \`--full\` runs 30 kills, 10 freezes, 10 connection faults,
a server restart and 3 full disks (on a 512 MB tmpfs).

## What is measured

${FLEET_MEASURED}

## Notes from this run

${r.fleet.notes.map((n) => `- ${n}`).join('\n') || '- none'}
`;
}

const FLEET_MEASURED = `- **The fleet** (\`test/chaos/fleet-pg.ts\`): an embedded PostgreSQL and three \`lightworker run\` processes on hosts
  host-a/b/c (2.5 s leases, \`auto_resume_orphans\` on), each reaching the server through its own loopback TCP proxy
  and given the store password in \`PGPASSWORD\`. Mock-worker tasks (2.5–7 s, 60 s timeout) are kept queued; each worker
  appends a beat (task, attempt, pid, time) to a side log every 50 ms. Faults, shuffled by the seed, one at a time
  (the next once the tasks the last one hit have ended), each aimed at a runner holding running work: **kill** (SIGKILL, started again 0.2–1.5 s later), **freeze** (SIGSTOP
  until the fleet found it lost and its tasks ran again elsewhere, then SIGCONT), **cut** (the proxy drops its
  connections and refuses new ones) and **black hole** (connections stay open, nothing is forwarded), each held as
  long as the freeze; **server restart** (the whole server stopped and started); **full disk** (below). A runner
  that exited meanwhile is started again (said in the notes).
- **Full disk** (\`test/chaos/fleet-pg-disk.ts\`; root only, otherwise not run and said why): the server's data folder
  is on a tmpfs (256 MB, \`--disk-mb\`; WAL kept to 32–64 MB) owned by \`postgres\`. Once two runners hold running work
  it is filled to the last byte for 25 s, then freed; a third of the tasks answer at length (24 KB), so their
  completing write needs new pages. One task is cancelled while it is full (cancelled again after if refused) and a
  running one after. **Stuck**: tasks claimed before space returned, still starting/running/verifying with no live
  worker 30 s after; **cancels that did not end a task**: a cancelled task still active 30 s after space returned
  (15 s after a later cancel); **runners that exited**: during or after it (started again, their last words in the
  notes); the server's PANICs (a WAL it cannot write) and the time from space returning to a fresh connection
  answering; **not back by itself**: no answer within 60 s (then restarted by hand). Cancelled tasks are not lost.
- **Double runs**: (task, attempt) pairs beaten by more than one process. **Overlapping attempts**: two attempts of
  one task whose beats interleave (the earlier one's last beat after the later one's first).
- **Lost tasks**: tasks not \`completed\` once everything ended (orphans resume by themselves, so none should wait).
  **Stuck tasks**: starting/running/verifying longer than their timeout + the lease.
- **Surviving processes**: live processes of the runners' homes or carrying a task's \`LIGHTWORKER_TASK_ID\`, and
  beating workers, 2 s after the runners stopped (SIGTERM).
- **Leaks**: places holding the store password: a text cell of the store, a file under the homes, a runner's stderr,
  a worker's environment.
- **Orphans left at the automatic-resume limit**: a task whose runner was lost more than 3 times stays orphaned for a
  person (by design: a worker that takes its runner down with it); the scenario resumes it by hand
  (\`retry --strategy resume\`) and counts it.
- **Recovery**: per task held by the faulted runner, from the fault to the first beat of its next attempt; tasks that
  finished on their own attempt (the runner came back in time) give no sample. **Recovery timeouts**: none within 60 s
  (a task left at the limit is not one).`;

function commandLine(o: Omit<ChaosOptions, 'log'>): string {
  return `npm run chaos -- --kills ${o.kills} --leaders ${o.leaders} --schedulers ${o.schedulers} --mcp ${o.mcp} --mcp-clients ${o.mcpClients} --http ${o.http} --accept-kills ${o.acceptKills} --escape-rounds ${o.escapeRounds} --seed ${o.seed} --task-timeout ${o.taskTimeoutS} --custody ${o.custody} --damage-tasks ${o.damageTasks} --flood-mb ${o.floodMb} --guards ${o.guards}`;
}

function renderDoc(r: ChaosReport): string {
  const verdict = passed(r) ? 'PASS: every figure that must be zero is zero.' : `FAIL: ${Object.entries(r.failures).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${v}`).join(', ')}.`;
  return `# Reliability figures

Produced by \`${commandLine(r.options)}\` on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC
(${cpus().length} cores, Node ${process.version}, ${r.durationS} s). ${verdict}

${renderTable(r)}

Bold figures must be 0; the command exits non-zero otherwise.

## What is measured

- **Leader kills**: ${r.options.leaders} \`lightworker run\` processes compete for the lease while DAGs of tasks run on a linked
  agent (\`test/chaos/fixtures/chaos-agent.mjs\`) that leaves SIGTERM-ignoring grandchildren, background children
  holding its stdout (\`sleep … &\`) and setsid-escaped descendants, with verify commands that take a while. The
  leader (the lease holder) is killed with SIGKILL while it runs work, and a new \`run\` starts. Afterwards every
  orphaned task is retried (an explicit new attempt) and everything is left to end.
- **Double runs**: (task, attempt) pairs the agent's own start ledger shows more than once.
- **Lost tasks**: tasks not in an end state once the run is over, or gone from the database.
- **Surviving processes**: live processes carrying the agent's marker (\`CHAOS_RUN\`) or a \`LIGHTWORKER_TASK_ID\` of
  the run, found in \`/proc/*/environ\` 2 s after every task ended and the leaders stopped (Linux only).
- **Stuck tasks**: tasks still starting/running/verifying longer than their timeout + the kill grace.
- **Takeover**: from the kill to the new leader's \`task.status → orphaned\` event of the dead leader's last task.
- **Competing schedulers**: ${r.options.schedulers} \`run\` processes started at the same instant, twice (work queued before, and
  submitted while they run); counted in double runs / lost / survivors above.
- **MCP fuzz**: seeded messages to \`lightworker mcp\` over stdio: malformed and truncated JSON, wrong types, huge
  strings, unknown methods, tool calls with garbage arguments, batches, deep nesting, NUL bytes, invalid UTF-8.
  Every well-formed request with an id must be answered, stdout must stay JSON-RPC, and a final \`tools/list\` must
  work.
- **Many MCP clients**: ${r.options.mcpClients} \`lightworker mcp\` processes on one home with a \`lightworker run\` leading;
  each calls \`delegate_task\` at the same moment, then \`wait_tasks\` until its task settles. **Refused**: delegate
  calls answered with any error; **internal**: answers with code \`internal\` plus processes that printed a stack
  trace; **false orphans**: tasks orphaned (the leader never died) or not completed; **lease moves**:
  \`scheduler.leader\` events naming anyone but the live leader. Memory per server after its task settled, RSS
  and PSS (shared pages, such as the node binary's, split among the processes sharing them: what each server
  really adds), against a bare \`node -e\` and Node with the MCP SDK's \`Server\` on stdio.
- **HTTP fuzz**: every route of \`lightworker serve\` (static files, \`/api/commands\`, \`/api/events\`, every command)
  with random methods, paths, headers (bad Host/Origin, huge), bodies (bad JSON, invalid UTF-8, deep nesting),
  first without credentials (nothing may change), then with them.
- **Leaks**: a corpus of shaped and shapeless secrets sent through every input and printed by the worker; a leak is
  a (secret, place) pair where the value or any 12-character piece of it appears in a text column of the database,
  a file under the home, or the output of \`show --json\`, \`events --json\`, \`tasks --json\`, \`diff --json\`, MCP
  \`get_task\`/\`get_task_diff\` or HTTP \`get_task\`/\`get_task_diff\`. The corpus has Azure connection strings and SAS
  URLs, a base64-encoded private key wrapped over lines, a token wrapped over two lines, and tokens in file names.
- **Half-applied accepts**: ${r.options.acceptKills} \`lightworker accept\` processes, each paused at a step chosen by the
  seed (journal written, ref moved, half the checkout written, checkout written, task marked, worktree removed — the
  accept's \`LIGHTWORKER_TEST_ACCEPT_PAUSE\` test hook) and killed there with SIGKILL or a Ctrl-C to its process
  group; then the next command runs. Counted: rounds where the branch, the index, the working tree and the task's
  status disagree (anything but fully accepted, or untouched with a second accept that works).
- **Custody**: a hostile linked agent (\`test/fixtures/hostile-git-agent.mjs\`) run ${r.options.custody} times across kinds (explore,
  review, execute), modes and ways of harm — from its own folder (\`git config core.hooksPath\`, a hook, \`refs/heads/main\`
  moved, \`git push --force origin\`) and by absolute path into the user's repository (the same, plus files of the
  checkout rewritten and planted, the index changed) — in batches run at once in one repository with an origin, packed
  refs, a hook and uncommitted work. **Bytes changed**: the bytes of the working tree, index, HEAD, config, hooks,
  info, packed-refs and refs outside \`refs/heads/lightworker/*\` (and the origin's refs) that differ after each batch.
  **Writes approved without a person**: execute tasks sent over \`lightworker mcp\` as \`delegate_task\` with mode
  \`auto_execute\` that were approved at creation or ran. **Agent turns by workers/doctor**: starts of the agent (its
  marker file) while \`workers --json\` and \`doctor\` run inside the repository.
- **Full disk**: the home on a 24 MB tmpfs (root only; otherwise not run, and said why), filled to the last byte
  while 3 tasks run and 3 wait, then freed. **Stuck tasks**: tasks not ended 30 s after space returned; **started
  while full**: waiting tasks claimed while the store could not be written; **not said**: the leader never said
  which file system is full and holds which store.
- **Store damage**: \`lightworker.db\` deleted, truncated to a third, or its middle third overwritten with random
  bytes, each under a leader running ${r.options.damageTasks} tasks. **Unnoticed**: the leader did not stop (exit 1,
  naming the store) within 30 s, or \`tasks\` or \`doctor\` then answered as if the store were healthy, or a
  command created a new store where the deleted one was; **survivors**: its workers still alive after it stopped.
- **Output floods**: linked workers printing 100k lines, a \`yes\`-style flood of 100-character lines and \`yes\`
  itself, each ending with its JSON result, run by a real \`run --until-idle\`: event rows stored against the
  \`[output] max_events\` cap, database and raw-log size, the leader's peak RSS; a flooded task must still complete
  with its result parsed and its verify run, and say once (\`worker.output_truncated\`) what it dropped.
- **Guards** (\`test/chaos/guards.ts\`, ${r.options.guards} tasks each, in-process leader, the codex worker replaced by
  \`test/fixtures/guards/scripted-codex.mjs\`): *runaways* report 1,000 tokens every 5 ms without end, each under its own
  \`max_tokens\` (half with \`on_exceeded = "ask"\`, half \`"fail"\`); tokens stored past the budget were written before the stop was decided
  (read from the pipe after it: a loaded leader reads late), lines written after it are counted from the raw log's
  own timestamps; **not stopped**: still running, or more than one line written after the stop. *Rate limits*: the
  first half of the runs get a 429 naming a 1 s reset, with \`retry_budget = 0\`; **failed** / **retries spent** must be 0.
  *Gateway rate limits* (\`test/chaos/guards-gateways.ts\`): two gateways; runs through \`a\` get a 429 naming a 2 s
  reset until as many were refused as there are tasks, runs through \`b\` answer; two thirds of the tasks use a model
  routed primary \`a\`, fallback \`b\`, the rest a model with no other route; **failed** must be 0, **starts on a
  paused gateway** (a task claimed while its gateway's pause was in force) must be 0; how many moved to the fallback
  route, and how many without one completed on \`a\` after its reset.
  *Flapping*: the worker crashes (503, no JSON) for 4 s; **starts while open**: a task claimed while its breaker's
  pause was in force (the probe after it is not one). *Tree totals* (\`test/chaos/guards-trees.ts\`): trees of three
  runaways, two running at once, under \`root_max_tokens\` only; **not stopped**: a running task of the tree not stopped
  with it, or more than one line written after the stop; **starts past the total**: a task of the tree claimed after it
  was reached. *Memory*: a fake meminfo (\`LIGHTWORKER_MEMINFO\`) says 300 MiB free under a 512 MiB floor while tasks
  are queued, then 100,000; **started below the floor** must be 0.

- **Escaped survivors**: a linked worker (\`test/fixtures/containment/escape-agent.sh\`) leaves six processes behind per
  task, each out of the process group and without the \`LIGHTWORKER_*\` marker: \`env -i setsid -f sleep\`; a Python
  daemon (double fork, setsid, every fd closed, execve with an empty environment); \`unset LIGHTWORKER_…; setsid sleep &\`;
  a \`daemon(3)\` (cwd /); a renamed one (prctl name, \`exec -a kworker/…\`); \`env -i nohup setsid … & disown\` ignoring
  SIGTERM and SIGHUP. Each task ends another way (${r.options.escapeRounds} × completed, cancel, timeout, kill -9 of the leader
  and a takeover, a leader stopped by two SIGTERMs); a survivor is a process still holding the task's unique
  \`sleep\` argument (found in \`/proc/*/cmdline\`, not by marker) 10 s after the task ended. "held by" says what
  contained the escapes while they ran (\`cgroup\`: a tree cgroup; \`subreaper\`: re-parented to the spawner helper).

- **PostgreSQL fleet**: \`npm run chaos -- --store postgres\` runs only the fleet scenario (runner kills, freezes past
  the lease, connection cuts and black holes, server restarts, a full server disk) and writes its figures to \`docs/reliability-postgres.md\`:

${FLEET_MEASURED}

## Notes from this run

${renderNotes(r).join('\n') || '- none'}
`;
}

const argv = process.argv.slice(2);
const stop = () => {
  killAllLabs();
  killAllFleets();
  process.exit(130);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
const log = (l: string) => process.stderr.write(`${l}\n`);
const storeAt = argv.indexOf('--store');
const store = storeAt >= 0 ? argv[storeAt + 1] : 'sqlite';
if (store !== 'sqlite' && store !== 'postgres') {
  process.stderr.write(`npm run chaos: --store is sqlite or postgres, not ${store ?? '(nothing)'}\n`);
  process.exit(2);
}
let ok: boolean;
if (store === 'postgres') {
  const { options, out } = parseFleetArgs(argv);
  const report = await runFleetChaos({ ...options, log });
  process.stdout.write(`\n${renderFleetTable(report)}\n\n${report.fleet.notes.map((n) => `- ${n}`).join('\n')}\n`);
  if (out !== '-') {
    writeFileSync(out, renderFleetDoc(report));
    process.stderr.write(`wrote ${out}\n`);
  }
  ok = passed(report);
} else {
  const { options, out } = parseArgs(argv.filter((_, i) => storeAt < 0 || (i !== storeAt && i !== storeAt + 1)));
  const report = await runChaos({ ...options, log });
  process.stdout.write(`\n${renderTable(report)}\n\n${renderNotes(report).join('\n')}\n`);
  if (out !== '-') {
    writeFileSync(out, renderDoc(report));
    process.stderr.write(`wrote ${out}\n`);
  }
  ok = passed(report);
}
process.stdout.write(`\n${ok ? 'PASS' : 'FAIL'}\n`);
process.exit(ok ? 0 : 1);
