// Scenario 2: k `lightworker run` processes started at the same instant on one home, over two rounds of
// work (queued before they start, and submitted while they run). Every (task, attempt) must run once.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stopLeaders } from './kills.js';
import { chaosObjective, withLab, type Lab } from './lab.js';
import { END_STATES, countDoubleRuns, findMarkedProcesses, openDbReadOnly, readTasks } from './observe.js';
import { createRng, sleep, type Rng } from './rng.js';

export interface CompeteFigures {
  schedulers: number;
  tasks: number;
  workerStarts: number;
  doubleRuns: number;
  lostTasks: number;
  survivors: number;
  notes: string[];
}

async function submitWave(lab: Lab, rng: Rng, wave: number, count: number): Promise<void> {
  const tasks = Array.from({ length: count }, (_, i) => ({
    ref: `t${i}`,
    name: `compete ${wave}.${i}`,
    objective: chaosObjective(`compete wave ${wave} task ${i}`, { sleep_ms: rng.int(100, 600), linger_s: 600 }),
    workspace: lab.repo,
    worker: 'chaos-agent',
    timeout_s: 30,
    depends_on: i >= 2 && rng.chance(0.3) ? [`t${rng.int(0, i - 1)}`] : [],
  }));
  const file = join(lab.root, `compete-${wave}.json`);
  writeFileSync(file, JSON.stringify({ tasks }));
  const r = await lab.cli(['submit', '--batch', file]);
  if (r.code !== 0) throw new Error(`submit --batch failed: ${r.stderr}`);
}

/** Run the competing-schedulers scenario in its own lab. */
export async function runCompete(o: { schedulers: number; tasksPerWave: number; seed: number }): Promise<CompeteFigures> {
  return withLab('compete', { agentConcurrency: 8 }, async (lab) => {
    const rng = createRng(o.seed ^ 0xc0de);
    const notes: string[] = [];
    const db = openDbReadOnly(lab.home);
    try {
      // Round 1: work first, then k `run --until-idle` at once.
      await submitWave(lab, rng, 1, o.tasksPerWave);
      const idle = Array.from({ length: o.schedulers }, () => lab.start(['run', '--until-idle']));
      const end1 = Date.now() + 120_000;
      while (Date.now() < end1 && idle.some((c) => c.exitCode === null && c.signalCode === null)) await sleep(100);
      const left = new Set(idle.filter((c) => c.exitCode === null && c.signalCode === null));
      if (left.size) notes.push(`${left.size} run --until-idle still running after 120 s`);
      await stopLeaders(left);
      // Round 2: k long-running `run` at once, then work arrives while they compete.
      const leaders = new Set(Array.from({ length: o.schedulers }, () => lab.start(['run'])));
      await sleep(300);
      await submitWave(lab, rng, 2, o.tasksPerWave);
      const end2 = Date.now() + 120_000;
      while (Date.now() < end2 && !readTasks(db).every((t) => END_STATES.has(t.status))) await sleep(100);
      notes.push(...(await stopLeaders(leaders)));
      const final = readTasks(db);
      const lost = final.filter((t) => !END_STATES.has(t.status));
      const notCompleted = final.filter((t) => t.status !== 'completed');
      if (notCompleted.length) notes.push(`${notCompleted.length} tasks ended other than completed (${[...new Set(notCompleted.map((t) => t.status))].join(', ')})`);
      const runs = countDoubleRuns(readFileSync(lab.runLog, 'utf8'));
      if (runs.doubleRuns) notes.push(`double runs: ${runs.pairs.slice(0, 5).join(', ')}`);
      await sleep(1000);
      const survivors = findMarkedProcesses({ runId: lab.runId, taskIds: new Set(final.map((t) => t.id)) });
      return { schedulers: o.schedulers, tasks: final.length, workerStarts: runs.starts, doubleRuns: runs.doubleRuns, lostTasks: lost.length, survivors: survivors.length, notes };
    } finally {
      db.close();
    }
  });
}
