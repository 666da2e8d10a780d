import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { parseAge } from '../core/age.js';
import { AppError } from '../core/errors.js';
import { collectGarbage } from '../isolation/gc.js';
import { backupStore } from '../store/backup.js';
import { EXPORT_FORMAT, EXPORT_VERSION, exportTreeRows, importTrees, listExportableTrees, parseExport, type ExportLine } from '../store/transfer.js';
import { getTask } from '../store/tasks.js';
import { TASK_ID } from '../tasks/schema.js';
import { defineCommand, requirePersonOrAllowed } from './table.js';

export const backupHome = defineCommand({
  name: 'backup_home',
  description: "A consistent copy of the home's store, taken while runners work (SQLite's online backup), checked before it is kept.",
  input: z.strictObject({
    file: z.string().min(1).max(4096),
    force: z.boolean().default(false),
  }),
  readOnly: false,
  async handler(ctx, input) {
    requirePersonOrAllowed(ctx, 'a backup of the store');
    if (!isAbsolute(input.file)) throw new AppError('invalid_input', `file: must be an absolute path, got "${input.file}"`, { field: 'file' });
    return backupStore(ctx.engine.db, input.file, { force: input.force });
  },
});

export const gcHome = defineCommand({
  name: 'gc_home',
  description: 'Find (dry run, the default) or delete (apply) task trees that ended before a cutoff, with their events, files and worktrees; each leaves a signed tombstone.',
  input: z.strictObject({
    older_than: z.string().min(1).max(32),
    apply: z.boolean().default(false),
    force: z.boolean().default(false),
  }),
  readOnly: false,
  destructive: true,
  async handler(ctx, input) {
    const olderThanMs = parseAge(input.older_than, 'older_than');
    if (input.apply || input.force) requirePersonOrAllowed(ctx, 'deleting task trees');
    return collectGarbage(ctx.engine, { olderThanMs, olderThan: input.older_than.trim(), apply: input.apply, force: input.force });
  },
});

/** A task's files under artifacts/ (names and sizes): they stay in this home; their list travels. */
function artifactList(artifacts: string, taskId: string): { name: string; bytes: number }[] {
  const dir = join(artifacts, taskId);
  if (!existsSync(dir)) return [];
  const out: { name: string; bytes: number }[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      const p = join(rel, name);
      const st = statSync(join(dir, p));
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push({ name: p, bytes: st.size });
    }
  };
  walk('');
  return out;
}

export const exportTrees = defineCommand({
  name: 'export_trees',
  description: "Ended task trees (or one) as JSON lines another home imports: tasks with results, dependencies, attempts, events (hash-checked again on import), artifact lists.",
  input: z.strictObject({
    /** Any task of the tree (its root is looked up); absent: every ended tree. */
    root_id: TASK_ID.optional(),
    dry_run: z.boolean().default(false),
  }),
  readOnly: true,
  handler(ctx, input) {
    if (!input.dry_run) requirePersonOrAllowed(ctx, 'exporting task trees');
    const db = ctx.engine.db;
    return db.transaction(() => {
      const root = input.root_id ? (getTask(db, input.root_id)?.rootId ?? input.root_id) : undefined;
      const trees = listExportableTrees(db, root);
      if (input.dry_run) return { trees, lines: null };
      const lines: ExportLine[] = [{ kind: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: Date.now(), trees: trees.length }];
      for (const t of trees) {
        const rows = exportTreeRows(db, t.rootId);
        lines.push(...rows);
        for (const r of rows) if (r.kind === 'task') lines.push({ kind: 'artifacts', root: t.rootId, task: String(r.row.id), files: artifactList(ctx.engine.home.artifacts, String(r.row.id)) });
      }
      lines.push({ kind: 'end', trees: trees.length, lines: lines.length });
      return { trees, lines: lines.map((l) => JSON.stringify(l)) };
    })();
  },
});

export const importTreesCommand = defineCommand({
  name: 'import_trees',
  description: 'Bring task trees from an export file into this home in one transaction (a damaged line refuses the whole file; trees already here are skipped).',
  input: z.strictObject({
    file: z.string().min(1).max(4096),
    dry_run: z.boolean().default(false),
  }),
  readOnly: false,
  handler(ctx, input) {
    requirePersonOrAllowed(ctx, 'importing task trees');
    if (!isAbsolute(input.file)) throw new AppError('invalid_input', `file: must be an absolute path, got "${input.file}"`, { field: 'file' });
    let text: string;
    try {
      text = readFileSync(input.file, 'utf8');
    } catch (e) {
      throw new AppError('invalid_input', `file: cannot read ${input.file}: ${(e as Error).message}`, { field: 'file' });
    }
    const parsed = parseExport(ctx.engine.db, text.split('\n'));
    return ctx.engine.write(() => importTrees(ctx.engine.db, parsed, { apply: !input.dry_run, from: input.file }));
  },
});

export const DATA_COMMANDS = [backupHome, gcHome, exportTrees, importTreesCommand];
