// `npm run bench [--all | name…]`: runs the benchmark modules in test/bench — by default floors (every figure
// beside a floor measured in the same run, as a ratio: floors.ts) and the quick set that measures the
// targets' table (scheduler, mcp; a few minutes in all), `--all` every module (some run real agent
// CLIs or build 10k-file repositories), or the named ones. Prints a table per module, the targets' table
// (each figure beside its target and the Python LightWorker's figure), and writes every figure as JSON to
// bench-results/latest.json (the run before is kept as bench-results/previous.json and compared).
// Timing never fails anything.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ISSUE_13_TARGETS } from './_targets.js';

type Figures = Record<string, number | string>;

const here = dirname(fileURLToPath(import.meta.url));
const DEFAULT = ['floors', 'scheduler', 'mcp'];
const args = process.argv.slice(2);
const all = args.includes('--all');
const wanted = args.filter((a) => !a.startsWith('--'));
const modules = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .map((f) => basename(f, '.ts'))
  .filter((n) => all || (wanted.length ? wanted.includes(n) : DEFAULT.includes(n)))
  .sort();

const fmt = (v: number | string | undefined) => (typeof v === 'number' ? String(Number(v.toFixed(v < 10 ? 2 : 1))) : (v ?? '—'));
const results: Record<string, Figures> = {};
const started = Date.now();
for (const name of modules) {
  const mod = (await import(pathToFileURL(join(here, `${name}.ts`)).href)) as { run?: () => Promise<Figures> };
  if (typeof mod.run !== 'function') continue;
  process.stderr.write(`\n== ${name}\n`);
  const t = performance.now();
  try {
    const figures = await mod.run();
    results[name] = figures;
    const width = Math.max(...Object.keys(figures).map((k) => k.length));
    for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(width)}  ${fmt(v)}\n`);
  } catch (err) {
    results[name] = { error: (err as Error).message };
    process.stdout.write(`error: ${(err as Error).message}\n`);
  }
  process.stderr.write(`(${name}: ${((performance.now() - t) / 1000).toFixed(1)} s)\n`);
}

const outDir = join(here, '..', '..', 'bench-results');
const latest = join(outDir, 'latest.json');
const previous = existsSync(latest) ? (JSON.parse(readFileSync(latest, 'utf8')) as { results?: Record<string, Figures> }).results ?? {} : {};
const pick = (r: Record<string, Figures>, [m, k]: [string, string]) => r[m]?.[k];

if (modules.some((m) => ISSUE_13_TARGETS.some((row) => row.from[0] === m))) {
  process.stdout.write('\n== targets: Python LightWorker | target | this run (previous run)\n');
  const rows = ISSUE_13_TARGETS.map((row) => {
    const v = pick(results, row.from);
    const also = row.also ? pick(results, row.also) : undefined;
    const before = pick(previous, row.from);
    const meets = (x: number) => ((row.lowerIsBetter ?? true) ? x <= row.target : x >= row.target);
    const judged = row.alsoTargeted && typeof also === 'number' ? [v, also] : [v];
    const met = judged.some((x) => typeof x !== 'number') ? '?' : judged.every((x) => meets(x as number)) ? 'met' : 'NOT met';
    const ours = `${fmt(v)}${also !== undefined ? ` / ${fmt(also)}` : ''} ${row.unit}`;
    return [row.figure, row.python, `≤ ${row.target.toLocaleString('en')} ${row.unit}`, ours, met, before === undefined ? '' : `(${fmt(before)})`];
  });
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) process.stdout.write(r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd() + '\n');
}

mkdirSync(outDir, { recursive: true });
if (existsSync(latest)) renameSync(latest, join(outDir, 'previous.json'));
const doc = { at: new Date(started).toISOString(), seconds: (Date.now() - started) / 1000, node: process.version, modules, targets: ISSUE_13_TARGETS, results };
writeFileSync(latest, JSON.stringify(doc, null, 2) + '\n');
process.stdout.write(`\nwrote ${latest} (${doc.seconds.toFixed(0)} s)\n`);
process.exit(0);
