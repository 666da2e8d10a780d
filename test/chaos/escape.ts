// Escaped processes: a linked worker (test/fixtures/containment/escape-agent.sh) leaves six processes behind per
// task, each out of LightWorker's process group and without its environment marker; every way a task can end is
// tried, and whatever still holds one of the task's tokens afterwards is a survivor. Found by argv alone.
import type { ChildProcess } from 'node:child_process';
import { ESCAPE_AGENT, SHAPES, containmentOf, escapeObjective, escapeTokens, holdersOf, killHolders, survivorsOf } from '../helpers/escapes.js';
import { until } from '../helpers/procs.js';
import { withLab, type Lab } from './lab.js';
import { openDbReadOnly } from './observe.js';

export const ENDINGS = ['completed', 'cancel', 'timeout', 'leader kill -9', 'leader stop'] as const;
export type Ending = (typeof ENDINGS)[number];

export interface EscapeFigures {
  /** Tasks run: rounds × endings. */
  tasks: number;
  /** Per ending, per shape (SHAPES order): processes alive once the task ended and its sweep's grace passed. */
  survivors: Record<Ending, number[]>;
  total: number;
  /** What held the escaped processes while they ran (cgroup, subreaper, none), counted over every shape and task. */
  heldBy: Record<string, number>;
  notes: string[];
}

export interface EscapeOptions {
  /** Times each ending is tried (each a task leaving six escapes). */
  rounds: number;
  log: (line: string) => void;
}

/** Run every ending `rounds` times; never throws for a survivor (only for a broken harness). */
export async function runEscape(o: EscapeOptions): Promise<EscapeFigures> {
  const survivors = Object.fromEntries(ENDINGS.map((e) => [e, SHAPES.map(() => 0)])) as Record<Ending, number[]>;
  const heldBy: Record<string, number> = {};
  const notes: string[] = [];
  let tasks = 0;
  if (o.rounds === 0) return { tasks, survivors, total: 0, heldBy, notes: ['not run (--escape-rounds 0)'] };
  if (process.platform !== 'linux') {
    notes.push(`not measured on ${process.platform}: the survivor scan reads /proc (there, only the process group is contained)`);
    return { tasks, survivors, total: 0, heldBy, notes };
  }
  await withLab('escape', {}, async (lab) => {
    const link = await lab.cli(['workers', 'link', 'escaper', '--command-json', JSON.stringify(['bash', ESCAPE_AGENT, '{prompt}'])]);
    if (link.code !== 0) throw new Error(`workers link failed: ${link.stderr}`);
    const run = new EscapeRun(lab);
    try {
      for (let round = 0; round < o.rounds; round++) {
        for (const ending of ENDINGS) {
          const tokens = escapeTokens();
          try {
            for (const held of await run.end(ending, tokens)) heldBy[held] = (heldBy[held] ?? 0) + 1;
            // A sweep's grace is 1 s in the lab: what lives 10 s after the task ended is a survivor.
            await until(() => survivorsOf(tokens) === 0, 10_000, 'no survivors').catch(() => undefined);
            const left = holdersOf(tokens);
            tokens.forEach((t, i) => (survivors[ending][i] += left.get(t)!.length));
            tasks++;
          } finally {
            killHolders(tokens);
          }
          o.log(`escape: ${ending}: ${SHAPES.map((s, i) => `${survivors[ending][i]}`).join(' ')}`);
        }
      }
    } finally {
      run.close();
    }
  });
  const total = Object.values(survivors).reduce((n, row) => n + row.reduce((a, b) => a + b, 0), 0);
  return { tasks, survivors, total, heldBy, notes };
}

/** One lab's leader and tasks: each ending is one task whose six escapes are running when it is ended. */
class EscapeRun {
  private leader: { proc: ChildProcess; stderr: string } | null = null;
  private readonly db;

  constructor(private readonly lab: Lab) {
    this.db = openDbReadOnly(lab.home);
  }

  close(): void {
    this.leader?.proc.kill('SIGKILL');
    this.db.close();
  }

  /** End a task the way `ending` says; returns what held its escapes while they ran. */
  async end(ending: Ending, tokens: string[]): Promise<string[]> {
    const leader = this.lead();
    const hold = ending !== 'completed';
    const id = await this.submit(escapeObjective(tokens, hold), ending === 'timeout' ? ['--timeout', '10'] : []);
    if (!hold) {
      await this.until(id, 'completed');
      return [];
    }
    await until(() => [...holdersOf(tokens).values()].every((p) => p.length > 0) && this.status(id) === 'running', 30_000, 'the six escapes to run');
    const held = [...holdersOf(tokens).values()].flat().map(containmentOf);
    if (ending === 'cancel') {
      const r = await this.lab.cli(['cancel', id]);
      if (r.code !== 0) throw new Error(`cancel failed: ${r.stderr}`);
      await this.until(id, 'cancelled');
    } else if (ending === 'timeout') {
      await this.until(id, 'timed_out');
    } else if (ending === 'leader kill -9') {
      leader.proc.kill('SIGKILL');
      await exitOf(leader.proc);
      this.leader = null;
      this.lead();
      await this.until(id, 'orphaned');
    } else {
      leader.proc.kill('SIGTERM');
      await until(() => /waiting for it to finish/.test(leader.stderr), 20_000, 'the leader to drain');
      // Signals within 500 ms of each other are one keypress: signal again until it cancels.
      await until(() => /cancelling/.test(leader.stderr) || (leader.proc.kill('SIGTERM'), false), 20_000, 'the leader to cancel', 200);
      await exitOf(leader.proc);
      this.leader = null;
      if (this.status(id) !== 'cancelled') throw new Error(`leader stop left the task ${this.status(id)}`);
    }
    return held;
  }

  private lead(): { proc: ChildProcess; stderr: string } {
    if (this.leader && this.leader.proc.exitCode === null && this.leader.proc.signalCode === null) return this.leader;
    const proc = this.lab.start(['run']);
    const leader = { proc, stderr: '' };
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (c: string) => (leader.stderr += c));
    return (this.leader = leader);
  }

  private async submit(objective: string, extra: string[]): Promise<string> {
    const r = await this.lab.cli(['submit', '--worker', 'escaper', '-w', this.lab.repo, '--json', ...extra, objective]);
    const id = /"id":\s*"([0-9A-Z]{26})"/.exec(r.stdout)?.[1];
    if (r.code !== 0 || !id) throw new Error(`submit failed: ${r.stderr}`);
    return id;
  }

  private status(id: string): string {
    return (this.db.prepare('SELECT status FROM tasks WHERE id = ?').get(id) as { status: string } | undefined)?.status ?? 'missing';
  }

  private until(id: string, status: string): Promise<void> {
    return until(() => this.status(id) === status, 60_000, () => `task ${id} to be ${status} (${this.status(id)})`);
  }
}

function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}
