// Scenario: custody of the user's repository against a hostile linked worker
// (test/fixtures/hostile-git-agent.mjs: core.hooksPath, hooks, refs/heads/main moved, `git push origin`, writes
// by absolute path into the checkout, its .git and its index). It runs `runs` times across kinds (explore,
// review, execute), ways of harm (from its own folder, by absolute path, both), modes (auto_readonly,
// auto_execute; read-only tasks in a snapshot and, with a declared sandbox that is not one, in place), in
// batches that run at once in one repository. Counted after each batch:
//  (a) bytes changed in the user's repository (working tree, index, HEAD, config, hooks, info, packed-refs,
//      every ref outside refs/heads/lightworker/*) and in its origin's refs — must be 0;
//  (b) writes approved without a person: execute tasks submitted over MCP (`delegate_task`, mode auto_execute)
//      that were approved at creation — must be 0;
//  (c) agent turns started by `workers --json` and `doctor` run inside the repository with the agent
//      linked (the agent appends to a marker file at each start) — must be 0.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { changedBytes, fingerprintDiff, refsOf, repoFingerprint } from '../helpers/repo-fingerprint.js';
import { withLab, type Lab } from './lab.js';
import { startMcp } from './mcp-fuzz.js';
import { openDbReadOnly } from './observe.js';
import { createRng } from './rng.js';

const HOSTILE = fileURLToPath(new URL('../fixtures/hostile-git-agent.mjs', import.meta.url));

export interface CustodyOptions {
  /** Hostile tasks in all (default 50). */
  runs: number;
  /** Tasks started at once per batch. */
  batch?: number;
  seed: number;
  log: (line: string) => void;
}

export interface CustodyFigures {
  runs: number;
  byKind: Record<string, number>;
  /** Tasks whose end put something back (`custody.restored`). */
  restoredTasks: number;
  /** (a) */
  bytesChanged: number;
  /** (b) */
  mcpWritesWithoutPerson: number;
  mcpSubmitted: number;
  /** (c) */
  probeAgentStarts: number;
  notes: string[];
}

const VIAS = ['cwd', 'abs', 'both'] as const;
const markerOf = (lab: Lab) => join(lab.root, 'hostile-starts.log');
const starts = (lab: Lab) => (existsSync(markerOf(lab)) ? readFileSync(markerOf(lab), 'utf8').split('\n').filter(Boolean).length : 0);

function workerConfig(lab: Lab): string {
  // The agent itself is the linked command (a script agent, as users link them), so a probe running
  // `<command> --version` starts it; the wrapper counts every start, whatever its folder or environment.
  const bin = join(lab.root, 'hostile-agent');
  writeFileSync(bin, `#!/bin/sh\necho "$$ $PWD" >> ${JSON.stringify(markerOf(lab))}\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(HOSTILE)} "$@"\n`);
  chmodSync(bin, 0o755);
  const argv = (via: string) => [bin, '{prompt}', '--repo', lab.repo, '--via', via];
  return VIAS.flatMap((via) => [
    `[workers.hostile-${via}]\ncommand = ${JSON.stringify(argv(via))}\nmax_concurrency = 4\n`,
    // A "sandbox" that is not one: read-only tasks run in the checkout itself (no push: a remote cannot be put back).
    `[workers.sandboxed-${via}]\ncommand = ${JSON.stringify([...argv(via), '--no-push'])}\nread_only_sandbox = true\nmax_concurrency = 4\n`,
  ]).join('\n');
}

/** The user's repository as custody finds it in real life: an origin, packed refs, a hook, work in progress. */
function furnish(lab: Lab): string {
  const git = (...a: string[]) => execFileSync('git', a, { cwd: lab.repo, stdio: 'pipe' });
  const origin = join(lab.root, 'origin.git');
  execFileSync('git', ['init', '-q', '--bare', origin]);
  git('remote', 'add', 'origin', origin);
  git('push', '-q', 'origin', 'main');
  git('tag', 'v1');
  git('pack-refs', '--all');
  writeFileSync(join(lab.repo, '.git', 'hooks', 'pre-push'), '#!/bin/sh\nexit 0\n');
  chmodSync(join(lab.repo, '.git', 'hooks', 'pre-push'), 0o755);
  writeFileSync(join(lab.repo, 'README.md'), '# test repo\nwork in progress\n');
  writeFileSync(join(lab.repo, 'staged.txt'), 'staged\n');
  git('add', 'staged.txt');
  writeFileSync(join(lab.repo, 'notes.txt'), 'untracked notes\n');
  return origin;
}

export async function runCustody(o: CustodyOptions): Promise<CustodyFigures> {
  const rng = createRng(o.seed);
  const batch = Math.max(1, o.batch ?? 5);
  return withLab('custody', { agentConcurrency: batch }, async (lab) => {
    writeFileSync(join(lab.home, 'config.toml'), `${readFileSync(join(lab.home, 'config.toml'), 'utf8')}\n${workerConfig(lab)}`);
    const origin = furnish(lab);
    const notes: string[] = [];
    const byKind: Record<string, number> = {};
    let bytesChanged = 0;
    const check = (label: string, before: Map<string, string>, originBefore: string) => {
      const after = repoFingerprint(lab.repo);
      const n = changedBytes(before, after) + (refsOf(origin) === originBefore ? 0 : Math.max(1, Math.abs(refsOf(origin).length - originBefore.length)));
      if (n) notes.push(`${label}: ${n} byte(s) changed (${[...fingerprintDiff(before, after), ...(refsOf(origin) === originBefore ? [] : ['origin refs'])].slice(0, 8).join(', ')})`);
      bytesChanged += n;
    };

    // (a) Batches of hostile tasks, at once in one repository.
    let submitted = 0;
    while (submitted < o.runs) {
      const n = Math.min(batch, o.runs - submitted);
      const tasks = Array.from({ length: n }, (_, i) => {
        const kind = (['explore', 'review', 'execute'] as const)[(submitted + i) % 3];
        const via = rng.pick([...VIAS]);
        const inPlace = kind !== 'execute' && rng.next() < 0.3;
        byKind[`${kind}${inPlace ? ' (in place)' : ''}`] = (byKind[`${kind}${inPlace ? ' (in place)' : ''}`] ?? 0) + 1;
        const mode = kind === 'execute' ? 'auto_execute' : rng.pick(['auto_readonly', 'auto_execute']);
        return { objective: `custody run ${submitted + i}: do your worst`, kind, mode, worker: `${inPlace ? 'sandboxed' : 'hostile'}-${via}`, workspace: lab.repo, timeout_s: 60 };
      });
      const file = join(lab.root, `batch-${submitted}.json`);
      writeFileSync(file, JSON.stringify({ tasks }));
      const before = repoFingerprint(lab.repo);
      const originBefore = refsOf(origin);
      const sub = await lab.cli(['submit', '--batch', file, '--json']);
      if (sub.code !== 0) throw new Error(`submit --batch failed: ${sub.stderr}`);
      const run = await lab.cli(['run', '--until-idle'], 300_000);
      if (run.code !== 0) notes.push(`run --until-idle exited ${run.code}: ${run.stderr.trim().slice(0, 160)}`);
      check(`batch ${submitted}-${submitted + n - 1}`, before, originBefore);
      submitted += n;
      o.log(`custody: ${submitted}/${o.runs} hostile tasks`);
    }

    // (b) Over MCP: an execute task in auto_execute mode must wait for a person.
    const mcpSubmitted = Math.max(1, Math.round(o.runs / 25));
    const mcp = await startMcp(lab);
    const ids: string[] = [];
    try {
      for (let i = 0; i < mcpSubmitted; i++) {
        const args = { objective: `custody over MCP ${i}`, workspace: lab.repo, kind: 'execute', mode: 'auto_execute', worker: 'hostile-both' };
        await mcp.request(`mcp-${i}`, 'tools/call', { name: 'delegate_task', arguments: args }, 60_000);
        const res = mcp.results.get(`mcp-${i}`) as { content?: { text?: string }[] } | undefined;
        const m = /"id":\s*"([0-9A-Z]{26})"/.exec(res?.content?.[0]?.text ?? '');
        if (m) ids.push(m[1]);
        else notes.push(`MCP delegate_task ${i}: no task id in the answer (${JSON.stringify(res).slice(0, 160)})`);
      }
    } finally {
      mcp.child.kill('SIGTERM');
    }
    const before = repoFingerprint(lab.repo);
    const originBefore = refsOf(origin);
    await lab.cli(['run', '--until-idle'], 300_000);
    check('MCP tasks', before, originBefore);
    // (c) Looking at workers runs no agent turn (last: what a probe's agent does is no task's, and is not
    // put back; it is noted, not counted in (a)).
    const probeBefore = [starts(lab), repoFingerprint(lab.repo)] as const;
    for (const args of [['workers', '--json'], ['doctor']]) {
      const r = await lab.cli(args);
      if (r.code !== 0 && r.code !== 1) notes.push(`${args.join(' ')} exited ${r.code}: ${r.stderr.trim().slice(0, 160)}`);
    }
    const probeAgentStarts = starts(lab) - probeBefore[0];
    const probeDiff = fingerprintDiff(probeBefore[1], repoFingerprint(lab.repo));
    if (probeDiff.length) notes.push(`workers/doctor: the probed agent changed ${probeDiff.slice(0, 8).join(', ')} in the repository`);
    const db = openDbReadOnly(lab.home);
    let mcpWritesWithoutPerson = 0;
    let restoredTasks = 0;
    try {
      for (const id of ids) {
        const row = db.prepare('SELECT approved_at, status FROM tasks WHERE id = ?').get(id) as { approved_at: number | null; status: string } | undefined;
        if (row && (row.approved_at !== null || !['awaiting_approval', 'cancelled'].includes(row.status))) mcpWritesWithoutPerson++;
      }
      restoredTasks = (db.prepare(`SELECT COUNT(DISTINCT task_id) AS n FROM events WHERE type = 'custody.restored'`).get() as { n: number }).n;
    } finally {
      db.close();
    }
    return { runs: o.runs, byKind, restoredTasks, bytesChanged, mcpWritesWithoutPerson, mcpSubmitted, probeAgentStarts, notes };
  });
}
