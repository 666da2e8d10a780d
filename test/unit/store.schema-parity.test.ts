import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../../main/store/db.js';
import { PG_MIGRATIONS, PG_ONLY_TABLES } from '../../main/store/pg/schema.js';
import { describeSchema, kindOfPgType, type SchemaShape } from '../../main/store/schema-shape.js';
import { makeHome, type TestHome } from '../helpers/env.js';

/**
 * The PostgreSQL schema as its DDL writes it (every CREATE TABLE, and every ALTER TABLE … ADD COLUMN a later
 * PG migration may bring), read from the text itself so the check needs no server; the postgres project also
 * checks this reading against the server's own catalogue.
 */
function pgSchemaFromDdl(): SchemaShape {
  const shape: SchemaShape = {};
  const sql = PG_MIGRATIONS.map((m) => m.sql)
    .join('\n')
    .replace(/--[^\n]*/g, '')
    .replace(/\$f\$[\s\S]*?\$f\$/g, '');
  for (const m of sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)\s*\(/gi)) {
    const cols: Record<string, ReturnType<typeof kindOfPgType>> = {};
    for (const part of splitTopLevel(bodyFrom(sql, m.index + m[0].length))) {
      const def = /^(\w+)\s+(.+)$/s.exec(part.trim());
      if (!def || /^(PRIMARY|UNIQUE|CHECK|FOREIGN|CONSTRAINT|EXCLUDE)$/i.test(def[1])) continue;
      cols[def[1]] = kindOfPgType(def[2]);
    }
    shape[m[1]] = cols;
  }
  for (const m of sql.matchAll(/ALTER TABLE (\w+) ADD COLUMN (?:IF NOT EXISTS )?(\w+)\s+([^,;]+)/gi)) (shape[m[1]] ??= {})[m[2]] = kindOfPgType(m[3]);
  return shape;
}

/** The text between the parenthesis opened just before `from` and the one that closes it. */
function bodyFrom(sql: string, from: number): string {
  let depth = 1;
  for (let i = from; i < sql.length; i++) {
    if (sql[i] === '(') depth++;
    else if (sql[i] === ')' && --depth === 0) return sql.slice(from, i);
  }
  throw new Error(`unclosed CREATE TABLE at ${from}`);
}

function splitTopLevel(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '(') depth++;
    else if (body[i] === ')') depth--;
    else if (body[i] === ',' && depth === 0) {
      parts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

function sqliteSchema(): SchemaShape {
  const db = openDb({ path: ':memory:' });
  try {
    return describeSchema(db);
  } finally {
    db.close();
  }
}

describe('the two schemas', () => {
  it('SQLite (its migrations) and PostgreSQL (its schema) have the same tables, columns and column kinds', () => {
    const sqlite = sqliteSchema();
    const pg = pgSchemaFromDdl();
    // The fleet's own tables are PostgreSQL's alone (each named, so no other table can slip in that way).
    for (const table of PG_ONLY_TABLES) {
      expect(pg[table], table).toBeDefined();
      delete pg[table];
    }
    expect(Object.keys(sqlite).length).toBeGreaterThan(10);
    expect(Object.keys(pg).sort()).toEqual(Object.keys(sqlite).sort());
    for (const table of Object.keys(sqlite)) expect({ table, columns: pg[table] }).toEqual({ table, columns: sqlite[table] });
  });

  describe.runIf(process.env.LIGHTWORKER_TEST_STORE === 'postgres')('on a PostgreSQL server', () => {
    let home: TestHome | null = null;
    afterAll(() => home?.cleanup());

    it('the schema the server holds is the one its DDL reads as', () => {
      home = makeHome();
      expect(describeSchema(home.engine.db)).toEqual(pgSchemaFromDdl());
    });
  });
});
