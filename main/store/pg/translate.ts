
/**
 * The engine's SQL is written once, for SQLite. PostgreSQL runs the same statements after this
 * mechanical rewrite, so no query module keeps two copies:
 * - `?` placeholders become `$1…$n`;
 * - `INDEXED BY name` (a SQLite planner hint) is dropped;
 * - `INSERT OR IGNORE INTO` becomes `INSERT INTO … ON CONFLICT DO NOTHING`;
 * - `json_each(?)` (a JSON array parameter) becomes `json_array_elements_text(…)` with a `value` column;
 * - `LIKE` becomes `ILIKE` (SQLite's LIKE ignores ASCII case);
 * - `IS ?` / `IS NOT ?` (SQLite's null-safe comparison) become `IS [NOT] DISTINCT FROM`;
 * - a camelCase alias (`AS rootId`, `as rootId`) is quoted, since PostgreSQL folds unquoted names to lower case;
 * - `CAST(… AS REAL)` becomes DOUBLE PRECISION (SQLite's REAL is 8 bytes, PostgreSQL's is 4).
 * `json_extract(doc, '$.a.b')` needs no rewrite: the PostgreSQL schema defines it (pg/schema.ts).
 * String literals, quoted identifiers and comments (line and block) are left as they are. SQLite-only
 * forms with no counterpart here are refused by name, so a new query that would behave
 * differently fails its first PostgreSQL test instead of misbehaving.
 */
export function toPostgres(sql: string): string {
  const parts = splitQuoted(sql);
  let n = 0;
  let onConflict = false;
  const out = parts.map((p) => {
    if (p.quoted) return p.text;
    const refused = REFUSED.exec(p.text);
    if (refused) throw new Error(`SQL not portable to PostgreSQL (${refused[0]}): ${sql.slice(0, 200)}`);
    let t = p.text
      .replace(/\bINDEXED\s+BY\s+\w+/gi, '')
      .replace(/\bjson_each\(\s*\?\s*\)/gi, 'json_array_elements_text(CAST(? AS json)) AS json_each(value)')
      .replace(/\bLIKE\b/gi, 'ILIKE')
      .replace(/\bIS\s+NOT\s+\?/gi, 'IS DISTINCT FROM ?')
      .replace(/\bIS\s+\?/gi, 'IS NOT DISTINCT FROM ?')
      .replace(/\bAS\s+REAL\b/gi, 'AS DOUBLE PRECISION')
      .replace(/\b(AS\s+)(\w+)/gi, (m: string, as: string, alias: string) => (CAMEL.test(alias) ? `${as}"${alias}"` : m));
    if (/\bINSERT\s+OR\s+IGNORE\s+INTO\b/i.test(t)) {
      onConflict = true;
      t = t.replace(/\bINSERT\s+OR\s+IGNORE\s+INTO\b/gi, 'INSERT INTO');
    }
    return t.replace(/\?/g, () => `$${++n}`);
  });
  let text = out.join('');
  if (onConflict) {
    const at = text.search(/\bRETURNING\b/i);
    text = at < 0 ? `${text.replace(/\s*;?\s*$/, '')} ON CONFLICT DO NOTHING` : `${text.slice(0, at)}ON CONFLICT DO NOTHING ${text.slice(at)}`;
  }
  return text;
}

/** A camelCase name (lower-case first letter, an upper-case one later), which PostgreSQL would fold. */
const CAMEL = /^[a-z][a-z0-9_]*[A-Z]/;

const REFUSED = /\b(INSERT\s+OR\s+(REPLACE|ABORT|FAIL|ROLLBACK)|GLOB|PRAGMA|IFNULL|rowid|json_tree|group_concat|strftime|datetime|julianday|WITHOUT\s+ROWID|AUTOINCREMENT)\b/i;

interface Part {
  text: string;
  quoted: boolean;
}

/** Split SQL into code and quoted runs ('string', "identifier", line and block comments), quotes doubled inside. */
function splitQuoted(sql: string): Part[] {
  const parts: Part[] = [];
  let i = 0;
  let start = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      if (i > start) parts.push({ text: sql.slice(start, i), quoted: false });
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) break;
        if (sql[j] === c) {
          if (sql[j + 1] === c) j += 2;
          else break;
        } else j++;
      }
      parts.push({ text: sql.slice(i, j + 1), quoted: true });
      i = start = j + 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      if (i > start) parts.push({ text: sql.slice(start, i), quoted: false });
      const end = sql.indexOf('\n', i);
      const j = end < 0 ? sql.length : end;
      parts.push({ text: sql.slice(i, j), quoted: true });
      i = start = j;
    } else if (c === '/' && sql[i + 1] === '*') {
      if (i > start) parts.push({ text: sql.slice(start, i), quoted: false });
      const end = sql.indexOf('*/', i + 2);
      const j = end < 0 ? sql.length : end + 2;
      parts.push({ text: sql.slice(i, j), quoted: true });
      i = start = j;
    } else i++;
  }
  if (start < sql.length) parts.push({ text: sql.slice(start), quoted: false });
  return parts;
}
