import { readFileSync } from 'node:fs';
import { isPostgres } from '../../main/store/db.js';
import type { TestHome } from './env.js';

/**
 * Everything a home's store holds, as text to search for a secret that must not be there.
 * SQLite: the database file's bytes (the WAL checkpointed into it first, free pages included).
 * PostgreSQL: every row of every table in the home's schema, byte columns as their raw bytes.
 */
export function storedText(h: TestHome): string {
  const db = h.engine.db;
  if (!isPostgres(db)) {
    db.pragma('wal_checkpoint(TRUNCATE)');
    return readFileSync(h.engine.home.db).toString('latin1');
  }
  const tables = db.prepare("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'").all() as { name: string }[];
  const out: string[] = [];
  for (const { name } of tables) {
    for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
      for (const v of Object.values(row)) out.push(Buffer.isBuffer(v) ? v.toString('latin1') : typeof v === 'string' ? v : JSON.stringify(v));
    }
  }
  if (tables.length === 0) throw new Error('the PostgreSQL schema holds no tables: wrong search_path?');
  return out.join('\n');
}
