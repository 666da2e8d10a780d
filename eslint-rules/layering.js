// The layers of main/, bottom to top: a folder may import itself and the folders of lower layers, never a
// folder of its own layer or above (a type import counts: it is a dependency all the same). The arrangement
// is drawn in docs/architecture.md. Every import against it is an error; since the order is strict (peers
// aside, which only ever point one way), no two folders can import each other in a loop either.
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = resolve(REPO, 'main');

/** Bottom to top. `engine` is main/engine.ts, `app` the composition root main/app.ts. */
export const LAYERS = [
  ['core'],
  ['platform'],
  ['store'],
  ['tasks'],
  ['cachelab'],
  ['workers'],
  ['requests'],
  ['isolation'],
  ['runner'],
  ['scheduler'],
  ['orchestration'],
  ['engine'],
  ['app'],
  ['commands'],
  ['cli', 'mcp', 'http', 'desktop', 'lib'],
];

/**
 * Faces that start another face: `serve` (cli) and the desktop window start the HTTP console, and
 * `lightworker mcp` (cli) starts the MCP stdio server. None of those imports its starter back.
 */
const PEERS = { cli: ['http', 'mcp'], desktop: ['http'] };

const RANK = new Map(LAYERS.flatMap((names, i) => names.map((n) => [n, i])));

/** The layer name of a file under main/ (its top folder, or the file's own name at the top), else null. */
export function folderOf(file) {
  const rel = relative(MAIN, resolve(file));
  if (rel.startsWith('..') || rel === '') return null;
  const parts = rel.split(sep);
  return parts.length > 1 ? parts[0] : parts[0].replace(/\.[^.]+$/, '');
}

/** May a file of folder `from` import one of folder `to`? Unknown folders are refused, so a new one gets a layer. */
export function mayImport(from, to) {
  if (from === to) return true;
  if (PEERS[from]?.includes(to)) return true;
  const a = RANK.get(from);
  const b = RANK.get(to);
  return a !== undefined && b !== undefined && b < a;
}

/** `main/x/y.ts -> folder`: one import of a file into another folder, as reports and tests name it. */
export function importKey(file, to) {
  return `${relative(REPO, resolve(file)).split(sep).join('/')} -> ${to}`;
}

/** Calls `found(node, from, to)` for every import of a main/ file that goes against the layers. */
function importsAgainstLayers(context, found) {
  const file = context.filename;
  const from = folderOf(file);
  if (!from || !RANK.has(from)) return {};
  const check = (node, source) => {
    if (typeof source !== 'string' || !source.startsWith('.')) return;
    const to = folderOf(resolve(dirname(file), source));
    if (to && !mayImport(from, to)) found(node, from, to);
  };
  return {
    ImportDeclaration: (n) => check(n, n.source.value),
    ExportNamedDeclaration: (n) => n.source && check(n, n.source.value),
    ExportAllDeclaration: (n) => check(n, n.source.value),
    ImportExpression: (n) => n.source.type === 'Literal' && check(n, n.source.value),
  };
}

const ORDER = LAYERS.map((l) => l.join('|')).join(' < ');

/** An import against the layers; a folder without a layer. */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports between the folders of main/ follow the layers (docs/architecture.md).' },
    schema: [],
    messages: {
      against: '{{from}}/ may not import {{to}}/ (layers, bottom to top: {{order}}); move the code down or pass it in.',
      unknown: 'main/{{folder}} has no layer: give it one in eslint-rules/layering.js.',
    },
  },
  create(context) {
    const from = folderOf(context.filename);
    if (from && !RANK.has(from)) return { Program: (node) => context.report({ node, messageId: 'unknown', data: { folder: from } }) };
    return importsAgainstLayers(context, (node, f, to) => context.report({ node, messageId: 'against', data: { from: f, to, order: ORDER } }));
  },
};

export default { rules: { layers: rule } };
