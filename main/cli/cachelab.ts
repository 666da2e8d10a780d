import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { ContextPackInfo } from '../cachelab/context-packs.js';
import type { CacheMetrics } from '../cachelab/metrics.js';
import { AppError } from '../core/errors.js';
import { withEngine } from './context.js';
import { out, printJson, table } from './output.js';

const pct = (r: number | null) => (r === null ? '—' : `${(r * 100).toFixed(1)}%`);

function positiveInt(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new AppError('invalid_input', `--${name}: expected a whole number ≥ 1, got "${v}"`, { field: name });
    return n;
  };
}

/** `--target 90`, `--target 90%` or `--target 0.9`. */
function targetRate(v: string): number {
  const n = Number(v.replace(/%$/, ''));
  const rate = v.endsWith('%') || n > 1 ? n / 100 : n;
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1) throw new AppError('invalid_input', `--target: expected a hit rate like 90 or 0.9, got "${v}"`, { field: 'target' });
  return rate;
}

function printMetrics(m: CacheMetrics): void {
  const agg = (label: string, a: CacheMetrics['overall']) => [label, String(a.samples), String(a.inputTokens), String(a.cachedTokens), pct(a.hitRate)];
  out(`Cache hit rate (token-weighted Σcached/Σinput), last ${m.window.minutes} min, target ${pct(m.target.rate)} on ≥ ${m.target.minSamples} verified warm samples\n`);
  out(table(['class', 'samples', 'input', 'cached', 'hit rate'], [agg('overall', m.overall), agg('cold', m.cold), agg('warm', m.warm), agg('indeterminate', m.indeterminate)]));
  out('');
  if (!m.cohorts.length) return out('No cohorts yet: samples appear when workers report usage.');
  out(table(
    ['cohort', 'status', 'warm hit', 'warm', 'remaining', 'samples', 'worker', 'model', 'route'],
    m.cohorts.map((c) => [c.cohort, c.status, pct(c.hitRate), String(c.warmSamples), String(c.remainingSamples), String(c.samples), c.worker, c.model ?? '-', c.route]),
  ));
  for (const c of m.cohorts) if (c.note) out(`  ${c.cohort}: ${c.note}`);
}

/** `lightworker cache-metrics` and `lightworker context-pack add|list|show|remove`. */
export function registerCachelabCommands(program: Command): void {
  program
    .command('cache-metrics')
    .description('prompt-cache hit rates: overall, cold, warm, per cohort with target status')
    .option('--window-min <n>', 'window in minutes (default 60)', positiveInt('window-min'))
    .option('--target <rate>', 'target hit rate, e.g. 90 or 0.9 (default 90%)', targetRate)
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const m = (await call('get_cache_metrics', { window_min: o.windowMin, target: o.target })) as CacheMetrics;
        if (o.json) printJson(m);
        else printMetrics(m);
      });
    });

  const packs = program.command('context-pack').description('named, versioned reference text for the stable prompt part (≤ 32 KiB)');
  const line = (p: ContextPackInfo) => [p.name, p.version, p.hash, String(p.bytes), new Date(p.createdAt).toISOString()];
  // `--version` is the root program's option (commander reads it before any subcommand), so the
  // version is given as NAME@VERSION or with --pack-version.
  packs
    .command('add <name>')
    .description('store a pack version from a UTF-8 file: add NAME@VERSION --file F (rejected if it looks like a credential)')
    .option('--pack-version <v>', 'version label, immutable once added (or write NAME@VERSION)')
    .requiredOption('--file <path>', 'UTF-8 text file')
    .option('--json')
    .action(async (nameArg: string, o, cmd: Command) => {
      const at = nameArg.lastIndexOf('@');
      const name = at > 0 ? nameArg.slice(0, at) : nameArg;
      const version = o.packVersion ?? (at > 0 ? nameArg.slice(at + 1) : undefined);
      if (!version) throw new AppError('invalid_input', 'version: give the version as NAME@VERSION or --pack-version V', { field: 'version' });
      await withEngine(cmd, async (call) => {
        const r = await call('add_context_pack', { name, version, file: resolve(o.file) });
        if (o.json) printJson(r);
        else out(`${r.created ? 'added' : 'unchanged'} ${r.name}@${r.version}  ${r.hash}  ${r.bytes} bytes`);
      });
    });
  packs
    .command('list')
    .description('every stored pack version: name, version, hash, bytes')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('list_context_packs', {})) as { packs: ContextPackInfo[] };
        if (o.json) printJson(r);
        else out(r.packs.length ? table(['name', 'version', 'hash', 'bytes', 'added'], r.packs.map(line)) : 'No context packs.');
      });
    });
  packs
    .command('show <name>')
    .description('one pack (NAME or NAME@VERSION): hash, bytes and versions — never the text')
    .option('--json')
    .action(async (name: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('get_context_pack', { name })) as ContextPackInfo & { versions: ContextPackInfo[] };
        if (o.json) printJson(r);
        else out(`${r.name}@${r.version}  ${r.hash}  ${r.bytes} bytes\n\n${table(['name', 'version', 'hash', 'bytes', 'added'], r.versions.map(line))}`);
      });
    });
  packs
    .command('remove <name>')
    .description('remove one version (NAME@VERSION) or every version (NAME); refused while an unfinished task uses it')
    .option('--json')
    .action(async (name: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('remove_context_pack', { name })) as { removed: ContextPackInfo[]; endedTasks: number };
        if (o.json) printJson(r);
        else {
          out(`removed ${r.removed.map((p) => `${p.name}@${p.version}`).join(', ')}`);
          if (r.endedTasks) out(`  ${r.endedTasks} ended task(s) used it: retrying one fails until the pack is added again`);
        }
      });
    });
}
