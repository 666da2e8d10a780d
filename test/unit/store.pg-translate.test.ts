import { describe, expect, it } from 'vitest';
import { toPostgres } from '../../main/store/pg/translate.js';

// The engine's SQL is written for SQLite; PostgreSQL runs it after this rewrite (store/pg/translate.ts).
// Pure string tests: the postgres test project runs the statements themselves against a real server.

describe('toPostgres rewrites', () => {
  it('numbers ? placeholders $1…$n in order', () => {
    expect(toPostgres('SELECT * FROM t WHERE a = ? AND b IN (?, ?)')).toBe('SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)');
  });

  it('drops the INDEXED BY planner hint', () => {
    expect(toPostgres('SELECT id FROM tasks INDEXED BY idx_tasks_ready WHERE status = ?')).toMatch(/^SELECT id FROM tasks\s+WHERE status = \$1$/);
  });

  it('INSERT OR IGNORE becomes ON CONFLICT DO NOTHING, before RETURNING and without a trailing semicolon', () => {
    expect(toPostgres('INSERT OR IGNORE INTO t (a) VALUES (?)')).toBe('INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING');
    expect(toPostgres('insert or ignore into t (a) values (?);')).toBe('INSERT INTO t (a) values ($1) ON CONFLICT DO NOTHING');
    expect(toPostgres('INSERT OR IGNORE INTO t (a) VALUES (?) RETURNING id')).toBe('INSERT INTO t (a) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id');
  });

  it('json_each(?) reads a JSON array parameter as rows with a value column', () => {
    expect(toPostgres('SELECT value FROM json_each(?)')).toBe('SELECT value FROM json_array_elements_text(CAST($1 AS json)) AS json_each(value)');
  });

  it('LIKE becomes ILIKE (SQLite’s LIKE ignores ASCII case), keeping ESCAPE', () => {
    expect(toPostgres("SELECT id FROM t WHERE name LIKE ? ESCAPE '\\'")).toBe("SELECT id FROM t WHERE name ILIKE $1 ESCAPE '\\'");
    expect(toPostgres('SELECT unlike, likely FROM t')).toBe('SELECT unlike, likely FROM t');
  });

  it('IS ? and IS NOT ? become the null-safe DISTINCT FROM comparisons; IS [NOT] NULL stays', () => {
    expect(toPostgres('SELECT 1 FROM t WHERE a IS ? AND b IS NOT ?')).toBe('SELECT 1 FROM t WHERE a IS NOT DISTINCT FROM $1 AND b IS DISTINCT FROM $2');
    expect(toPostgres('SELECT 1 FROM t WHERE a IS NULL AND b IS NOT NULL')).toBe('SELECT 1 FROM t WHERE a IS NULL AND b IS NOT NULL');
  });

  it('quotes camelCase aliases (PostgreSQL folds unquoted names), whatever the case of AS; leaves others', () => {
    expect(toPostgres('SELECT a AS rootId, b as childCount, c AS plain, d AS snake_case, CAST(e AS INTEGER) FROM t')).toBe(
      'SELECT a AS "rootId", b as "childCount", c AS plain, d AS snake_case, CAST(e AS INTEGER) FROM t',
    );
  });

  it('CAST(… AS REAL) becomes DOUBLE PRECISION (SQLite’s REAL has 8 bytes)', () => {
    expect(toPostgres('SELECT CAST(n AS REAL) / ? FROM t')).toBe('SELECT CAST(n AS DOUBLE PRECISION) / $1 FROM t');
  });

  it('leaves json_extract alone (the PostgreSQL schema defines it)', () => {
    expect(toPostgres("SELECT json_extract(payload, '$.a.b') FROM events WHERE seq > ?")).toBe("SELECT json_extract(payload, '$.a.b') FROM events WHERE seq > $1");
  });
});

describe('toPostgres leaves quoted text and comments alone', () => {
  it('in string literals (doubled quotes included) and quoted identifiers', () => {
    expect(toPostgres(`SELECT 'a ? LIKE b', 'it''s ? IS ?', "col?LIKE" FROM t WHERE x = ?`)).toBe(`SELECT 'a ? LIKE b', 'it''s ? IS ?', "col?LIKE" FROM t WHERE x = $1`);
  });

  it('in -- line comments and /* block */ comments', () => {
    expect(toPostgres('SELECT a -- why? LIKE rowid\nFROM t WHERE b = ?')).toBe('SELECT a -- why? LIKE rowid\nFROM t WHERE b = $1');
    expect(toPostgres('SELECT /* a ? IS ? GLOB */ a FROM t WHERE b = ?')).toBe('SELECT /* a ? IS ? GLOB */ a FROM t WHERE b = $1');
  });

  it('does not refuse a SQLite-only word inside a string or a longer name', () => {
    expect(toPostgres("SELECT 'PRAGMA datetime GLOB' AS label, parent_rowid FROM t")).toBe("SELECT 'PRAGMA datetime GLOB' AS label, parent_rowid FROM t");
  });
});

describe('toPostgres refuses SQLite-only forms by name', () => {
  const refused: [string, string][] = [
    ['INSERT OR REPLACE', 'INSERT OR REPLACE INTO t (a) VALUES (?)'],
    ['INSERT OR ABORT', 'INSERT OR ABORT INTO t (a) VALUES (?)'],
    ['INSERT OR FAIL', 'INSERT OR FAIL INTO t (a) VALUES (?)'],
    ['INSERT OR ROLLBACK', 'INSERT OR ROLLBACK INTO t (a) VALUES (?)'],
    ['GLOB', 'SELECT 1 FROM t WHERE a GLOB ?'],
    ['PRAGMA', 'PRAGMA user_version'],
    ['IFNULL', 'SELECT IFNULL(a, 0) FROM t'],
    ['rowid', 'SELECT rowid FROM t'],
    ['json_tree', 'SELECT * FROM json_tree(?)'],
    ['group_concat', 'SELECT group_concat(a) FROM t'],
    ['strftime', "SELECT strftime('%s', 'now')"],
    ['datetime', "SELECT datetime('now')"],
    ['julianday', "SELECT julianday('now')"],
    ['WITHOUT ROWID', 'CREATE TABLE t (a TEXT PRIMARY KEY) WITHOUT ROWID'],
    ['AUTOINCREMENT', 'CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT)'],
  ];
  it.each(refused)('%s', (name, sql) => {
    expect(() => toPostgres(sql)).toThrow(`SQL not portable to PostgreSQL (${name})`);
  });
});
