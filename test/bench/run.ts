// `npm run bench [name…]`: runs every benchmark module in test/bench (or the named ones), prints a table
// per module and one JSON document at the end. Timing never fails anything.
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const modules = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.startsWith('_'))
  .map((f) => basename(f, '.ts'))
  .filter((n) => !wanted.length || wanted.includes(n))
  .sort();

const all: Record<string, Record<string, number | string>> = {};
for (const name of modules) {
  const mod = (await import(pathToFileURL(join(here, `${name}.ts`)).href)) as { run?: () => Promise<Record<string, number | string>> };
  if (typeof mod.run !== 'function') continue;
  process.stderr.write(`\n== ${name}\n`);
  try {
    const figures = await mod.run();
    all[name] = figures;
    const width = Math.max(...Object.keys(figures).map((k) => k.length));
    for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(width)}  ${typeof v === 'number' ? Number(v.toFixed(3)) : v}\n`);
  } catch (err) {
    all[name] = { error: (err as Error).message };
    process.stdout.write(`error: ${(err as Error).message}\n`);
  }
}
process.stdout.write('\n' + JSON.stringify(all, null, 2) + '\n');
process.exit(0);
