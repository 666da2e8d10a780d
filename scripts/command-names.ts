// Print (or with --write, rewrite) main/commands/names.ts from the command table.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../main/commands/index.js';

const file = fileURLToPath(new URL('../main/commands/names.ts', import.meta.url));
const src = readFileSync(file, 'utf8');
const list = [...COMMANDS.keys()].map((n) => `  '${n}',`).join('\n');
const next = src.replace(/export const COMMAND_NAMES = \[[\s\S]*?\] as const;/, `export const COMMAND_NAMES = [\n${list}\n] as const;`);
if (process.argv.includes('--write')) {
  writeFileSync(file, next);
  process.stderr.write(`wrote ${COMMANDS.size} names to ${file}\n`);
} else process.stdout.write(next);
