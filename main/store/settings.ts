import { isPostgres, prep, type Db } from './db.js';

/** Small JSON values by key (linked workers, scheduler pause, UI preferences). */
export function getSetting<T>(db: Db, key: string): T | null {
  const row = prep(db, 'SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as T) : null;
}

export function setSetting(db: Db, key: string, value: unknown): void {
  prep(db, 'INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at').run(
    key,
    JSON.stringify(value),
    Date.now(),
  );
}

export function deleteSetting(db: Db, key: string): boolean {
  return prep(db, 'DELETE FROM settings WHERE key = ?').run(key).changes > 0;
}

export function settingsWithPrefix<T>(db: Db, prefix: string): { key: string; value: T }[] {
  // SQLite: a key range on the primary key (binary order); PostgreSQL: substr, since its text order
  // follows the database's collation, where a range bound is not reliable.
  const rows = (
    isPostgres(db)
      ? prep(db, 'SELECT key, value FROM settings WHERE substr(key, 1, ?) = ? ORDER BY key').all(prefix.length, prefix)
      : prep(db, 'SELECT key, value FROM settings WHERE key >= ? AND key < ? || char(0x10FFFF) ORDER BY key').all(prefix, prefix)
  ) as { key: string; value: string }[];
  return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }));
}
