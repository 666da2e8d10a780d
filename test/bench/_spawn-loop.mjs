// The floor a leader's drain is measured against: a plain Node loop over the same fake worker, `conc` at a
// time — spawn it with the same kind of argv, write a prompt to its stdin, read its JSONL stdout, wait for
// its exit, then the next. No store, no git, no files of its own (the fake writes its answer file).
// argv: <fake> <n> <conc> <dir>. Prints {cpuMs, maxRssKiB} of this process (startup included) on exit.
import { spawn } from 'node:child_process';

const [fake, nArg, concArg, dir] = process.argv.slice(2);
const n = Number(nArg);
let started = 0;
let done = 0;

function next() {
  if (started >= n) return;
  const i = started++;
  const child = spawn(fake, ['exec', '--json', '--output-last-message', `${dir}/${i}.json`, '-'], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.resume();
  child.stdin.end(`task ${i}: do nothing\n`);
  child.on('close', () => {
    if (!out.includes('turn.completed')) throw new Error(`run ${i}: no turn.completed`);
    if (++done === n) finish();
    else next();
  });
}

function finish() {
  const u = process.cpuUsage();
  process.stdout.write(JSON.stringify({ cpuMs: (u.user + u.system) / 1000, maxRssKiB: process.resourceUsage().maxRSS }) + '\n');
}

for (let c = 0; c < Number(concArg); c++) next();
