import { createHash } from 'node:crypto';
import { AppError } from '../core/errors.js';
import { TERMINAL } from '../core/model.js';
import { appendEvent, GENESIS_HASH, hashChained } from './events.js';
import { prep, writeTx, type Db } from './db.js';
import { describeSchema } from './schema-shape.js';
import { readTombstones } from './tombstones.js';

/** The tables a tree travels with, in the order they are written on import (parents before children). */
const TABLES = { task: 'tasks', dep: 'task_deps', attempt: 'attempts', event: 'events' } as const;
type Kind = keyof typeof TABLES;
type Row = Record<string, unknown>;

export const EXPORT_FORMAT = 'lightworker-export';
export const EXPORT_VERSION = 1;

/** One line of an export file: a header, a row of one table, a task's artifact list, or the trailer. */
export type ExportLine =
  | { kind: 'header'; format: typeof EXPORT_FORMAT; version: number; exportedAt: number; trees: number }
  | { kind: Kind; root: string; row: Row; sum: string }
  | { kind: 'artifacts'; root: string; task: string; files: { name: string; bytes: number }[] }
  | { kind: 'end'; trees: number; lines: number };

/** A row line's checksum: a damaged line (a flipped byte, a cut) is named by its number on import. */
function rowSum(row: Row): string {
  return createHash('sha256').update(JSON.stringify(row)).digest('hex').slice(0, 16);
}

export interface TreeSummary {
  rootId: string;
  tasks: number;
  events: number;
}

/** Trees that may move: every task ended. `rootId`: just that tree (refused when it has not ended). */
export function listExportableTrees(db: Db, rootId?: string): TreeSummary[] {
  if (rootId) {
    const live = prep(db, 'SELECT COUNT(*) AS n, SUM(CASE WHEN status IN (' + [...TERMINAL].map((s) => `'${s}'`).join(', ') + ') THEN 0 ELSE 1 END) AS live FROM tasks WHERE root_id = ?').get(rootId) as { n: number; live: number | null };
    if (!Number(live.n)) throw new AppError('not_found', `tree: no task tree with root ${rootId}`, { field: 'tree' });
    if (Number(live.live) > 0) throw new AppError('invalid_input', `tree: ${rootId} still has ${live.live} task(s) that have not ended; only ended trees move between homes`, { field: 'tree' });
  }
  const ended = [...TERMINAL].map((s) => `'${s}'`).join(', ');
  const rows = prep(
    db,
    `SELECT t.root_id, COUNT(*) AS n, (SELECT COUNT(*) FROM events e WHERE e.chain IN (SELECT id FROM tasks x WHERE x.root_id = t.root_id)) AS ev FROM tasks t
     ${rootId ? 'WHERE t.root_id = ?' : ''} GROUP BY t.root_id HAVING SUM(CASE WHEN t.status IN (${ended}) THEN 0 ELSE 1 END) = 0 ORDER BY MIN(t.created_at), t.root_id`,
  ).all(...(rootId ? [rootId] : [])) as { root_id: string; n: number; ev: number }[];
  return rows.map((r) => ({ rootId: r.root_id, tasks: Number(r.n), events: Number(r.ev) }));
}

/**
 * The rows of one tree as export lines: its tasks (parents first), dependencies, attempts and events.
 * Events keep their chain, position and hashes, so the importing home checks every link again; events
 * written before per-task chains (migration 008) are left out (they belong to the one legacy chain).
 */
export function exportTreeRows(db: Db, rootId: string): ExportLine[] {
  const q = (sql: string) => prep(db, sql).all(rootId) as Row[];
  const tasks = q('SELECT * FROM tasks WHERE root_id = ? ORDER BY depth, created_at, id');
  const deps = q('SELECT d.* FROM task_deps d JOIN tasks t ON t.id = d.task_id WHERE t.root_id = ? ORDER BY d.task_id, d.depends_on');
  const attempts = q('SELECT a.* FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.root_id = ? ORDER BY a.task_id, a.attempt');
  const events = q('SELECT task_id, type, ts, payload, prev_hash, hash, chain, chain_pos FROM events WHERE chain IN (SELECT id FROM tasks WHERE root_id = ?) ORDER BY chain, chain_pos');
  return [
    ...tasks.map((row) => ({ kind: 'task' as const, root: rootId, row, sum: rowSum(row) })),
    ...deps.map((row) => ({ kind: 'dep' as const, root: rootId, row, sum: rowSum(row) })),
    ...attempts.map((row) => ({ kind: 'attempt' as const, root: rootId, row, sum: rowSum(row) })),
    ...events.map((row) => ({ kind: 'event' as const, root: rootId, row, sum: rowSum(row) })),
  ];
}

export interface ImportReport {
  applied: boolean;
  imported: TreeSummary[];
  skipped: { rootId: string; reason: string }[];
  artifacts: number;
}

interface ParsedTree {
  rootId: string;
  rows: Record<Kind, Row[]>;
}

const bad = (line: number, why: string) => new AppError('invalid_input', `line ${line}: ${why}; nothing was imported`, { field: 'file', line });

/**
 * Check an export file's lines (numbered from 1) and group them by tree: a header first, a trailer last
 * with the right counts (a truncated file is refused), every row's columns known to this store's schema,
 * every task ended and of its line's tree, every event chain complete and each link's hash right.
 */
export function parseExport(db: Db, lines: string[]): { trees: ParsedTree[]; artifacts: number } {
  const columns = describeSchema(db);
  const trees = new Map<string, ParsedTree>();
  let artifacts = 0;
  let header = false;
  let end: { trees: number; lines: number } | null = null;
  const chains = new Map<string, { pos: number; hash: string }>();
  const seen = new Set<string>();
  let n = 0;
  for (const [i, text] of lines.entries()) {
    const no = i + 1;
    if (!text.trim()) continue;
    if (end) throw bad(no, 'text after the end line');
    n++;
    let line: ExportLine;
    try {
      line = JSON.parse(text) as ExportLine;
    } catch {
      throw bad(no, 'not JSON (the file is damaged or not a LightWorker export)');
    }
    if (!line || typeof line !== 'object') throw bad(no, 'not an export line');
    if (!header) {
      if (line.kind !== 'header' || line.format !== EXPORT_FORMAT) throw bad(no, `not a LightWorker export (the first line must be its header)`);
      if (line.version !== EXPORT_VERSION) throw bad(no, `export format version ${String(line.version)} is not one this LightWorker reads (${EXPORT_VERSION})`);
      header = true;
      continue;
    }
    if (line.kind === 'end') {
      end = line;
      if (line.lines !== n - 1) throw bad(no, `the end line counts ${line.lines} lines before it, the file has ${n - 1} (lines were lost or added)`);
      continue;
    }
    if (line.kind === 'artifacts') {
      artifacts += Array.isArray(line.files) ? line.files.length : 0;
      continue;
    }
    if (!(line.kind in TABLES) || typeof (line as { root?: unknown }).root !== 'string') throw bad(no, `unknown kind "${String((line as { kind?: unknown }).kind)}"`);
    const { kind, root, row, sum } = line as { kind: Kind; root: string; row: Row; sum?: string };
    if (!row || typeof row !== 'object') throw bad(no, 'no row');
    if (sum !== rowSum(row)) throw bad(no, `its ${kind} row does not match its checksum (edited or damaged)`);
    const table = TABLES[kind];
    for (const c of Object.keys(row)) if (!columns[table]?.[c] || (table === 'events' && c === 'seq')) throw bad(no, `"${c}" is not a column of ${table} here`);
    const tree = trees.get(root) ?? { rootId: root, rows: { task: [], dep: [], attempt: [], event: [] } };
    trees.set(root, tree);
    if (kind === 'task') {
      if (typeof row.id !== 'string' || row.root_id !== root) throw bad(no, `task ${String(row.id)} is not of tree ${root}`);
      if (seen.has(row.id)) throw bad(no, `task ${row.id} appears twice`);
      seen.add(row.id);
      if (!TERMINAL.has(row.status as never)) throw bad(no, `task ${row.id} is ${String(row.status)}; only ended trees move between homes`);
    }
    if (kind === 'event') {
      const chain = String(row.chain ?? '');
      const pos = Number(row.chain_pos);
      const prev = chains.get(chain) ?? { pos: 0, hash: GENESIS_HASH };
      if (!tree.rows.task.some((t) => t.id === chain) || row.task_id !== chain) throw bad(no, `event of "${chain}", which is no task of tree ${root} in this file`);
      if (pos !== prev.pos + 1 || row.prev_hash !== prev.hash) throw bad(no, `event ${pos} of task ${chain} does not follow event ${prev.pos} (a line is missing or out of order)`);
      if (hashChained(String(row.prev_hash), chain, pos, String(row.type), Number(row.ts), String(row.payload)) !== row.hash) {
        throw bad(no, `event ${pos} of task ${chain} does not match its hash (edited or damaged)`);
      }
      chains.set(chain, { pos, hash: String(row.hash) });
    }
    tree.rows[kind].push(row);
  }
  if (!header) throw bad(1, 'empty file: not a LightWorker export');
  if (!end) throw bad(lines.length, 'no end line (the file was cut short)');
  if (end.trees !== trees.size) throw bad(lines.length, `the end line counts ${end.trees} trees, the file holds ${trees.size}`);
  return { trees: [...trees.values()], artifacts };
}

function insertRow(db: Db, table: string, row: Row): void {
  const cols = Object.keys(row);
  prep(db, `INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...cols.map((c) => row[c]));
}

/**
 * Bring parsed trees into this store in one write transaction: all of them or (on any error) none. A
 * tree whose task ids this home already holds is skipped (imported before), and so is one gc deleted
 * here (its tombstone's chains would conflict). Ids are kept; events are written as they were (their
 * hashes verify here too) with this store's sequence numbers, and each chain gets its head row.
 */
export function importTrees(db: Db, parsed: { trees: ParsedTree[]; artifacts: number }, opts: { apply: boolean; from: string | null }): ImportReport {
  const run = (): ImportReport => {
    const report: ImportReport = { applied: opts.apply, imported: [], skipped: [], artifacts: parsed.artifacts };
    const deleted = readTombstones(db).ends;
    const has = prep(db, 'SELECT id FROM tasks WHERE id = ?');
    for (const t of parsed.trees) {
      const ids = t.rows.task.map((r) => String(r.id));
      const here = ids.find((id) => has.get(id));
      const gone = ids.find((id) => deleted.has(id));
      if (here) report.skipped.push({ rootId: t.rootId, reason: `already in this home (task ${here}): imported before; skipped` });
      else if (gone) report.skipped.push({ rootId: t.rootId, reason: `deleted from this home by gc (tombstone at event ${deleted.get(gone)!.seq}); its ids cannot return; skipped` });
      else {
        if (opts.apply) writeTree(db, t, opts.from);
        report.imported.push({ rootId: t.rootId, tasks: ids.length, events: t.rows.event.length });
      }
    }
    return report;
  };
  return opts.apply ? writeTx(db, run) : run();
}

function writeTree(db: Db, t: ParsedTree, from: string | null): void {
  for (const row of t.rows.task) insertRow(db, 'tasks', row);
  for (const row of t.rows.dep) insertRow(db, 'task_deps', row);
  // The dependency trigger counted again what the exported rows already said.
  for (const row of t.rows.task) prep(db, 'UPDATE tasks SET deps_pending = ? WHERE id = ?').run(row.deps_pending ?? 0, row.id);
  for (const row of t.rows.attempt) insertRow(db, 'attempts', row);
  const heads = new Map<string, { pos: number; seq: number; hash: string }>();
  for (const row of t.rows.event) {
    const { seq } = prep(db, 'INSERT INTO events (task_id, type, ts, payload, prev_hash, hash, chain, chain_pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq').get(
      row.task_id, row.type, row.ts, row.payload, row.prev_hash, row.hash, row.chain, row.chain_pos,
    ) as { seq: number };
    heads.set(String(row.chain), { pos: Number(row.chain_pos), seq, hash: String(row.hash) });
  }
  const head = prep(db, 'INSERT INTO chain_heads (chain, pos, seq, hash) VALUES (?, ?, ?, ?)');
  for (const [chain, h] of heads) head.run(chain, h.pos, h.seq, h.hash);
  appendEvent(db, null, 'tree.imported', { rootId: t.rootId, tasks: t.rows.task.length, events: t.rows.event.length, from });
}
