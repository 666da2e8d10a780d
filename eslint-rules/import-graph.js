// The imports between the folders of main/ (type imports included), and the folder cycles they make.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importKey, folderOf } from './layering.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const IMPORT = /^\s*(?:import|export)\b[^'";]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/gm;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts') && !name.endsWith('.d.mts')) out.push(p);
  }
  return out;
}

/**
 * Every import from one folder of main/ to another: `{ file, from, to, key }` with `key` naming it
 * (`main/x/y.ts -> folder`). 
 */
export function folderImports(root = resolve(REPO, 'main')) {
  const edges = [];
  for (const file of sourceFiles(root)) {
    const from = folderOf(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(IMPORT)) {
      const to = folderOf(resolve(dirname(file), m[1] ?? m[2]));
      if (to && from && to !== from) edges.push({ file: relative(REPO, file).split(sep).join('/'), from, to, key: importKey(file, to) });
    }
  }
  return edges;
}

/** Strongly connected groups of more than one folder, each sorted, as `a b c` strings, sorted. */
export function folderCycles(edges) {
  const g = new Map();
  for (const { from, to } of edges) {
    if (!g.has(from)) g.set(from, new Set());
    g.get(from).add(to);
  }
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) groups.push(group.sort().join(' '));
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return groups.sort();
}
