// Scenario: workers that flood their output. Each case is a linked worker run by a real `run --until-idle`:
// 100k ordinary lines, a `yes`-style flood of 100-character lines, and `yes` itself (2-byte lines), each
// ending with its JSON result line and followed by a verify command. Measured per case: the event rows
// stored for the task, the database's size after it, the raw log's size, the leader's peak RSS (VmHWM of
// the `run` process, sampled while it runs), and whether the task still ended properly: completed, its
// result parsed from the final line, its verify run, one `worker.output_truncated` event when output was
// dropped.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withLab, type Lab } from './lab.js';
import { openDbReadOnly } from './observe.js';
import { sleep } from './rng.js';

export interface FloodCase {
  name: string;
  /** What the worker printed: lines and megabytes. */
  lines: number;
  mb: number;
  status: string;
  schemaValid: boolean;
  verifyRan: boolean;
  /** Event rows of the task (all types) and of worker output. */
  rows: number;
  outputRows: number;
  truncatedEvents: number;
  droppedEvents: number;
  /** Lines of output the stored messages still hold. */
  storedLines: number;
  dbBytes: number;
  rawLogBytes: number;
  /** The raw log ends with the result line, and says what it left out when it did. */
  rawLogTail: boolean;
  rawLogNote: boolean;
  peakRssMb: number;
  seconds: number;
}

export interface FloodFigures {
  cases: FloodCase[];
  maxEvents: number;
  rawLogBytes: number;
  /** Cases whose task did not end completed with its result and verify, or lost its truncation note. */
  improperEnds: number;
  notes: string[];
}

export interface FloodOptions {
  /** Lines of the ordinary case (default 100k). */
  lines?: number;
  /** MB of the 100-character-line flood (default 200). */
  floodMb?: number;
  /** MB of the `yes` flood (2-byte lines; default 40). */
  yesMb?: number;
  log: (line: string) => void;
}

/** The `[output]` defaults the lab runs with. */
const maxEvents = 2000;
const RESULT = JSON.stringify({ summary: 'flood done', findings: [] });
const LINE = 'compiling module lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor 0123';

/** Peak RSS (VmHWM, MB) of a process, or 0 once it is gone. */
function peakRss(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

function sizeOf(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

async function runCase(lab: Lab, name: string, command: string[], lines: number, mb: number, log: FloodOptions['log']): Promise<FloodCase> {
  const link = await lab.cli(['workers', 'link', name, '--command-json', JSON.stringify(command)]);
  if (link.code !== 0) throw new Error(`workers link ${name} failed: ${link.stderr}`);
  const marker = join(lab.root, `${name}.verified`);
  const verify = JSON.stringify([process.execPath, '-e', 'require("fs").writeFileSync(process.argv[1], "ok")', marker]);
  const sub = await lab.cli(['submit', '--worker', name, '--kind', 'explore', '--timeout', '600', '--verify', verify, '--workspace', lab.repo, '--json', `print a lot (${name})`]);
  if (sub.code !== 0) throw new Error(`submit ${name} failed: ${sub.stderr}`);
  const id = JSON.parse(sub.stdout).task.id as string;
  const started = Date.now();
  const run = lab.start(['run', '--until-idle']);
  let peak = 0;
  const exited = new Promise<void>((r) => run.once('exit', () => r()));
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    peak = Math.max(peak, peakRss(run.pid!));
    await sleep(100);
  }
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const db = openDbReadOnly(lab.home);
  try {
    const task = db.prepare('SELECT status, schema_valid AS sv FROM tasks WHERE id = ?').get(id) as { status: string; sv: number | null };
    const count = (where: string) => (db.prepare(`SELECT COUNT(*) AS n FROM events WHERE task_id = ? ${where}`).get(id) as { n: number }).n;
    const truncated = db.prepare(`SELECT payload FROM events WHERE task_id = ? AND type = 'worker.output_truncated'`).all(id) as { payload: string }[];
    const texts = db.prepare(`SELECT json_extract(payload, '$.text') AS t FROM events WHERE task_id = ? AND type = 'worker.message'`).all(id) as { t: string }[];
    const rawLog = join(lab.home, 'artifacts', id, 'attempt-1', 'stdout.jsonl');
    const c: FloodCase = {
      name,
      lines,
      mb,
      status: task.status,
      schemaValid: task.sv === 1,
      verifyRan: existsSync(marker),
      rows: count(''),
      outputRows: count(`AND type IN ('worker.message', 'worker.tool')`),
      truncatedEvents: truncated.length,
      droppedEvents: truncated.reduce((n, t) => n + Number(JSON.parse(t.payload).droppedEvents ?? 0), 0),
      storedLines: texts.reduce((n, t) => n + (t.t ? t.t.split('\n').length : 0), 0),
      dbBytes: sizeOf(join(lab.home, 'lightworker.db')) + sizeOf(join(lab.home, 'lightworker.db-wal')),
      rawLogBytes: sizeOf(rawLog),
      rawLogTail: existsSync(rawLog) && readFileSync(rawLog, 'utf8').trimEnd().endsWith(RESULT),
      rawLogNote: existsSync(rawLog) && readFileSync(rawLog, 'utf8').includes('of output left out here'),
      peakRssMb: peak,
      seconds,
    };
    log(`floods: ${name}: ${c.status}, ${c.rows} rows, ${c.truncatedEvents} truncation events, db ${(c.dbBytes / 1e6).toFixed(1)} MB, peak RSS ${c.peakRssMb} MB, ${c.seconds} s`);
    return c;
  } finally {
    db.close();
  }
}

/** Run the flood cases in one lab, one after another (so each peak RSS is its own). */
export async function runFloods(o: FloodOptions): Promise<FloodFigures> {
  const lines = o.lines ?? 100_000;
  const floodMb = o.floodMb ?? 200;
  const yesMb = o.yesMb ?? 40;
  return withLab('floods', {}, async (lab) => {
    const printer = join(lab.root, 'print-lines.mjs');
    writeFileSync(printer, `const n = Number(process.argv[2]);\nlet out = '';\nfor (let i = 1; i <= n; i++) {\n  out += 'line ' + i + ': building step ' + i + ' of ' + n + '\\n';\n  if (out.length > 65536) { process.stdout.write(out); out = ''; }\n}\nprocess.stdout.write(out + ${JSON.stringify(RESULT + '\n')});\n`);
    const shFlood = (text: string, mb: number) => ['sh', '-c', `yes '${text}' | head -c ${mb * 1024 * 1024}; echo; echo '${RESULT}'`, 'sh', '{prompt_file}'];
    const cases = [
      await runCase(lab, 'flood-lines', [process.execPath, printer, String(lines), '{prompt_file}'], lines, 0, o.log),
      await runCase(lab, 'flood-long', shFlood(LINE, floodMb), Math.round((floodMb * 1024 * 1024) / (LINE.length + 1)), floodMb, o.log),
      await runCase(lab, 'flood-yes', shFlood('y', yesMb), (yesMb * 1024 * 1024) / 2, yesMb, o.log),
    ];
    const notes: string[] = [];
    let improperEnds = 0;
    for (const c of cases) {
      const why = [
        c.status !== 'completed' && `ended ${c.status}`,
        !c.schemaValid && 'its final result line was not parsed',
        !c.verifyRan && 'its verify did not run',
        // Exactly one note when something was dropped (the event cap reached, the raw log cut), none otherwise.
        c.truncatedEvents !== (c.outputRows >= maxEvents || c.rawLogNote ? 1 : 0) && `${c.truncatedEvents} output_truncated events (want ${c.outputRows >= maxEvents || c.rawLogNote ? 1 : 0})`,
        !c.rawLogTail && 'its raw log lost its last line',
      ].filter(Boolean);
      if (why.length) {
        improperEnds++;
        notes.push(`${c.name}: ${why.join(', ')}`);
      }
    }
    return { cases, maxEvents, rawLogBytes: 8 * 1024 * 1024, improperEnds, notes };
  });
}
