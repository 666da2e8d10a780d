import { isPostgres, prep, type Db } from './db.js';

/**
 * The storage class of a column, the same on both backends: SQLite's affinity of its declared type
 * (INTEGER, TEXT, REAL, BLOB) and the PostgreSQL type standing in for it (BIGINT for INTEGER: millisecond
 * timestamps; DOUBLE PRECISION for REAL; BYTEA for BLOB).
 */
export type ColumnKind = 'integer' | 'text' | 'real' | 'blob' | 'numeric';

/** Table name → column name → kind: what this store's schema holds. */
export type SchemaShape = Record<string, Record<string, ColumnKind>>;

/** SQLite's affinity rules (https://www.sqlite.org/datatype3.html, 3.1), in their order. */
export function kindOfSqliteType(declared: string): ColumnKind {
  const t = declared.toUpperCase();
  if (t.includes('INT')) return 'integer';
  if (/CHAR|CLOB|TEXT/.test(t)) return 'text';
  if (t === '' || t.includes('BLOB')) return 'blob';
  if (/REAL|FLOA|DOUB/.test(t)) return 'real';
  return 'numeric';
}

/** The kind a PostgreSQL type (as written in DDL, or information_schema's data_type) stands in for. */
export function kindOfPgType(declared: string): ColumnKind {
  const t = declared.toLowerCase().trim();
  if (/^(bigint|integer|int|int[248]|smallint|bigserial|serial|boolean)\b/.test(t)) return 'integer';
  if (/^(text|character varying|varchar|character|char|jsonb?|uuid)\b/.test(t)) return 'text';
  if (/^(double precision|real|float[48]?)\b/.test(t)) return 'real';
  if (/^bytea\b/.test(t)) return 'blob';
  return 'numeric';
}

/**
 * Every table of this store's schema, with its columns' kinds (SQLite: the declared types; PostgreSQL: this
 * schema's). PostgreSQL's `schema_version` table is left out: it is the store's bookkeeping, what SQLite
 * keeps in its `user_version` header field.
 */
export function describeSchema(db: Db): SchemaShape {
  const shape: SchemaShape = {};
  if (isPostgres(db)) {
    const rows = prep(
      db,
      `SELECT c.table_name AS t, c.column_name AS c, c.data_type AS d FROM information_schema.columns c
       JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
       WHERE c.table_schema = current_schema() AND tb.table_type = 'BASE TABLE' AND c.table_name <> 'schema_version'`,
    ).all() as { t: string; c: string; d: string }[];
    for (const r of rows) (shape[r.t] ??= {})[r.c] = kindOfPgType(r.d);
    return shape;
  }
  const tables = prep(db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[];
  for (const { name } of tables) {
    const cols = prep(db, 'SELECT name, type FROM pragma_table_info(?)').all(name) as { name: string; type: string }[];
    shape[name] = Object.fromEntries(cols.map((c) => [c.name, kindOfSqliteType(c.type)]));
  }
  return shape;
}
