import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../main/core/config.js';
import { isPostgres, openDb, type Db } from '../../main/store/db.js';
import { openPgDb, storeTarget } from '../../main/store/pg/open.js';
import type { TestHome } from './env.js';

/**
 * Everything a home's store holds, as text to search for a secret that must not be there.
 * SQLite: the database file's bytes (the WAL checkpointed into it first, free pages included).
 * PostgreSQL: every text and byte cell of every table in the home's schema.
 */
export function storedText(h: TestHome): string {
  const db = h.engine.db;
  if (!isPostgres(db)) {
    db.pragma('wal_checkpoint(TRUNCATE)');
    return readFileSync(h.engine.home.db).toString('latin1');
  }
  return storedCells(db)
    .map((c) => c.text)
    .join('\n');
}

/** A connection to the store of the home at `root` (its SQLite file or its PostgreSQL schema), as another process has. */
export function connectHome(root: string): Db {
  const target = storeTarget(loadConfig(join(root, 'config.toml')));
  return target ? openPgDb(target, root) : openDb({ path: join(root, 'lightworker.db') });
}

/** Every text or byte cell of every table (bytes as latin1), named `table.column`. */
export function storedCells(db: Db): { where: string; text: string }[] {
  const columns = isPostgres(db)
    ? (db
        .prepare(
          `SELECT table_name AS t, column_name AS c FROM information_schema.columns
           WHERE table_schema = current_schema() AND data_type IN ('text', 'bytea') ORDER BY table_name, ordinal_position`,
        )
        .all() as { t: string; c: string }[])
    : (db.prepare(`SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid`).all() as { t: string; c: string }[]);
  if (columns.length === 0) throw new Error('the store has no tables: wrong home or schema?');
  const cells: { where: string; text: string }[] = [];
  for (const { t, c } of columns) {
    for (const { v } of db.prepare(`SELECT "${c}" AS v FROM "${t}" WHERE "${c}" IS NOT NULL`).all() as { v: unknown }[]) {
      if (typeof v === 'string') cells.push({ where: `${t}.${c}`, text: v });
      else if (Buffer.isBuffer(v)) cells.push({ where: `${t}.${c}`, text: v.toString('latin1') });
    }
  }
  return cells;
}
