import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Files outside main/store/ that may hold SQL: none. Kept as a list so that an exception, if one is ever
 * made, is named here and fails the test once its SQL has moved.
 */
const NOT_YET_MOVED: string[] = [];

/** SQL in a string: a statement's opening words, as the store's modules write them (upper case). */
const SQL = /\b(SELECT\s|INSERT (OR \w+ )?INTO|UPDATE \w+ SET|DELETE FROM|CREATE (UNIQUE )?(TABLE|INDEX|TRIGGER|FUNCTION)|ALTER TABLE|DROP (TABLE|INDEX)|PRAGMA|LISTEN|NOTIFY|pg_notify|json_extract)\b/;
/** Driver calls and dialect questions that belong to the store. */
const STORE_CALLS = new Set(['prepare', 'pragma', 'prep', 'isPostgres']);

/** Where a source file holds SQL or talks to the driver: `line: what` for each. */
function findStoreCode(fileName: string, text: string): string[] {
  const found: string[] = [];
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const at = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const visit = (n: ts.Node): void => {
    if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateHead(n) || ts.isTemplateMiddle(n) || ts.isTemplateTail(n)) {
      const m = SQL.exec(n.text);
      if (m) found.push(`${at(n)}: SQL (${m[1].split(/\s/)[0]}) in a string`);
    }
    if (ts.isCallExpression(n)) {
      const callee = n.expression;
      const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : null;
      if (name && STORE_CALLS.has(name)) found.push(`${at(n)}: ${name}()`);
    }
    if (ts.isPropertyAccessExpression(n) && n.name.text === 'dialect') found.push(`${at(n)}: .dialect`);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

function sourcesOutsideStore(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) {
        if (rel !== 'main/store') walk(rel);
      } else if (/\.(ts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts') && !e.name.endsWith('.d.mts')) out.push(rel);
    }
  };
  walk('main');
  return out;
}

describe('SQL lives in main/store/', () => {
  it('no file outside it prepares a statement, asks the dialect or holds SQL in a string (but the listed ones, not yet moved)', () => {
    const offenders: Record<string, string[]> = {};
    for (const file of sourcesOutsideStore()) {
      const found = findStoreCode(file, readFileSync(join(ROOT, file), 'utf8'));
      if (found.length) offenders[relative(ROOT, join(ROOT, file))] = found;
    }
    expect(Object.keys(offenders).filter((f) => !NOT_YET_MOVED.includes(f)).map((f) => `${f}: ${offenders[f].join('; ')}`)).toEqual([]);
    // A listed file that holds no SQL any more comes off the list.
    expect(NOT_YET_MOVED.filter((f) => !offenders[f])).toEqual([]);
  });

  it('finds planted SQL, a prepare() and a dialect branch, and leaves prose and regular expressions alone', () => {
    expect(findStoreCode('x.ts', "db.prepare('SELECT 1').get();")).toEqual(['1: prepare()', '1: SQL (SELECT) in a string']);
    expect(findStoreCode('x.ts', 'const q = `UPDATE tasks SET cohort = ${k} WHERE id = ?`;')).toEqual(['1: SQL (UPDATE) in a string']);
    expect(findStoreCode('x.ts', "if (isPostgres(db)) x();\nif (db.dialect === 'postgres') y();")).toEqual(['1: isPostgres()', '2: .dialect']);
    expect(findStoreCode('x.ts', "// SELECT * FROM tasks\nconst m = /^([a-z_]+): /.exec(s);\nthrow new Error('select a task from the list');")).toEqual([]);
  });
});
