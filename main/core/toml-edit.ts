import { parse as parseToml } from 'smol-toml';

/**
 * A small TOML editor that keeps a hand-written file's comments and layout: it changes only the values
 * that differ between two parsed versions of the document, in place. A key's value is replaced where it
 * stands (its trailing comment kept), a missing key is added at the end of its table, a missing table
 * is appended, and a removed key or table is cut out. A value inside an inline table is set by
 * rewriting that one inline table.
 */

type Doc = Record<string, unknown>;

interface Header {
  path: string[];
  /** `[[array of tables]]`: left alone (LightWorker's config has none). */
  array: boolean;
  /** Offset of the `[` and of the end of the header's line (after its newline). */
  start: number;
  lineEnd: number;
}

interface Pair {
  /** Header path + dotted key. */
  path: string[];
  table: Header | null;
  /** Offsets: start of the line, start/end of the value, end of the line (after the newline). */
  lineStart: number;
  valueStart: number;
  valueEnd: number;
  lineEnd: number;
}

interface Scan {
  headers: Header[];
  pairs: Pair[];
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\t';

class Scanner {
  i = 0;
  constructor(readonly s: string) {}

  skipSpace(newlines: boolean): void {
    for (;;) {
      const c = this.s[this.i];
      if (isSpace(c) || (newlines && (c === '\n' || c === '\r'))) this.i++;
      else if (c === '#' && newlines) this.toLineEnd();
      else return;
    }
  }

  /** Moves past the end of the current line (past its newline). */
  toLineEnd(): void {
    const n = this.s.indexOf('\n', this.i);
    this.i = n === -1 ? this.s.length : n + 1;
  }

  /** One key part: bare, "basic" or 'literal'. */
  keyPart(): string {
    const s = this.s;
    const q = s[this.i];
    if (q === '"' || q === "'") {
      const start = this.i;
      this.string();
      const raw = s.slice(start, this.i);
      return q === '"' ? (JSON.parse(raw) as string) : raw.slice(1, -1);
    }
    const start = this.i;
    while (this.i < s.length && /[A-Za-z0-9_-]/.test(s[this.i])) this.i++;
    if (start === this.i) throw new Error(`unexpected "${s[this.i] ?? 'end of file'}" at offset ${this.i}`);
    return s.slice(start, this.i);
  }

  /** A dotted key, up to (not including) `stop`. */
  key(): string[] {
    const parts: string[] = [];
    for (;;) {
      this.skipSpace(false);
      parts.push(this.keyPart());
      this.skipSpace(false);
      if (this.s[this.i] !== '.') return parts;
      this.i++;
    }
  }

  string(): void {
    const s = this.s;
    for (const q of ['"""', "'''"]) {
      if (s.startsWith(q, this.i)) {
        let j = this.i + 3;
        for (;;) {
          if (j >= s.length) throw new Error('unterminated string');
          if (q === '"""' && s[j] === '\\') j += 2;
          else if (s.startsWith(q, j)) break;
          else j++;
        }
        while (s[j + 3] === q[0]) j++; // up to two quotes may end the content
        this.i = j + 3;
        return;
      }
    }
    const q = s[this.i];
    let j = this.i + 1;
    while (j < s.length && s[j] !== q && s[j] !== '\n') j += q === '"' && s[j] === '\\' ? 2 : 1;
    if (s[j] !== q) throw new Error('unterminated string');
    this.i = j + 1;
  }

  /** Moves past one value of any type. */
  value(): void {
    const s = this.s;
    const c = s[this.i];
    if (c === '"' || c === "'") return this.string();
    if (c === '[' || c === '{') {
      const close = c === '[' ? ']' : '}';
      this.i++;
      for (;;) {
        this.skipSpace(true);
        if (s[this.i] === close) break;
        if (c === '{') {
          this.key();
          if (s[this.i] !== '=') throw new Error(`expected "=" at offset ${this.i}`);
          this.i++;
          this.skipSpace(false);
        }
        this.value();
        this.skipSpace(true);
        if (s[this.i] === ',') this.i++;
        else if (s[this.i] !== close) throw new Error(`expected "," or "${close}" at offset ${this.i}`);
      }
      this.i++;
      return;
    }
    const start = this.i;
    while (this.i < s.length && !',]}#\n\r'.includes(s[this.i])) this.i++;
    while (this.i > start && isSpace(s[this.i - 1])) this.i--;
    if (start === this.i) throw new Error(`expected a value at offset ${start}`);
  }
}

function scan(text: string): Scan {
  const sc = new Scanner(text);
  const headers: Header[] = [];
  const pairs: Pair[] = [];
  let table: Header | null = null;
  for (;;) {
    sc.skipSpace(true);
    if (sc.i >= text.length) break;
    const lineStart = text.lastIndexOf('\n', sc.i - 1) + 1;
    if (text[sc.i] === '[') {
      const array = text[sc.i + 1] === '[';
      const start = sc.i;
      sc.i += array ? 2 : 1;
      const path = sc.key();
      sc.i += array ? 2 : 1;
      sc.toLineEnd();
      table = { path, array, start, lineEnd: sc.i };
      headers.push(table);
      continue;
    }
    const key = sc.key();
    if (text[sc.i] !== '=') throw new Error(`expected "=" at offset ${sc.i}`);
    sc.i++;
    sc.skipSpace(false);
    const valueStart = sc.i;
    sc.value();
    const valueEnd = sc.i;
    sc.toLineEnd();
    pairs.push({ path: [...(table?.path ?? []), ...key], table, lineStart, valueStart, valueEnd, lineEnd: sc.i });
  }
  return { headers, pairs };
}

/** A TOML table's value: a plain object (not an array, not a date). */
export const isPlainObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
const samePath = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const startsWith = (a: string[], prefix: string[]) => prefix.length <= a.length && prefix.every((x, i) => x === a[i]);

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Date || b instanceof Date) return String(a) === String(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Equal documents, where a missing table and an empty one are the same (removing a map's last entry). */
function sameDocument(a: unknown, b: unknown): boolean {
  if (isPlainObject(a) || isPlainObject(b)) {
    if (!(isPlainObject(a) || a === undefined) || !(isPlainObject(b) || b === undefined)) return false;
    const x = a ?? {};
    const y = b ?? {};
    return [...new Set([...Object.keys(x), ...Object.keys(y)])].every((k) => sameDocument(x[k], y[k]));
  }
  return deepEqual(a, b);
}

/** A key as TOML writes it: bare when it can be, else a basic string. */
export function formatKey(k: string): string {
  return /^[A-Za-z0-9_-]+$/.test(k) ? k : formatValue(k);
}

/** A value in TOML syntax, on one line (objects as inline tables). */
export function formatValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v).replace(/\x7f/g, '\\u007f');
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'nan';
    if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
    return String(v);
  }
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return `[${v.map(formatValue).join(', ')}]`;
  if (isPlainObject(v)) {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    return entries.length ? `{ ${entries.map(([k, x]) => `${formatKey(k)} = ${formatValue(x)}`).join(', ')} }` : '{}';
  }
  throw new Error(`cannot write ${String(v)} as TOML`);
}

/** Lines of a new table `[path]` holding `value`: scalars and arrays first, then its sub-tables. */
function tableText(path: string[], value: Doc): string {
  const leaves = Object.entries(value).filter(([, v]) => v !== undefined && !isPlainObject(v));
  const subs = Object.entries(value).filter(([, v]) => isPlainObject(v)) as [string, Doc][];
  // A table holding only sub-tables needs no header of its own (TOML defines it implicitly).
  const own = leaves.length || !subs.length ? `[${path.map(formatKey).join('.')}]\n${leaves.map(([k, v]) => `${formatKey(k)} = ${formatValue(v)}\n`).join('')}` : '';
  return [own, ...subs.map(([k, v]) => tableText([...path, k], v))].filter(Boolean).join('\n');
}

function getIn(doc: unknown, path: string[]): unknown {
  return path.reduce<unknown>((o, k) => (isPlainObject(o) ? o[k] : undefined), doc);
}

/** `obj` with the value at `path` set (or removed when `value` is undefined); copies along the path. */
export function setIn(obj: unknown, path: string[], value: unknown): unknown {
  const base = isPlainObject(obj) ? { ...obj } : {};
  if (path.length === 1) {
    if (value === undefined) delete base[path[0]];
    else base[path[0]] = value;
    return base;
  }
  base[path[0]] = setIn(base[path[0]], path.slice(1), value);
  return base;
}

type Edit = { start: number; end: number; text: string };

/** One change against the current text: the edit that sets `path` to `value` (undefined: removes it). */
function editFor(text: string, doc: Doc, path: string[], value: unknown): Edit[] {
  const { headers, pairs } = scan(text);
  const eol = text.includes('\r\n') ? '\r\n' : '\n'; // a Windows-edited file keeps its line ends
  const exact = pairs.find((p) => samePath(p.path, path));
  if (exact) {
    if (value === undefined) return [{ start: exact.lineStart, end: exact.lineEnd, text: '' }];
    return [{ start: exact.valueStart, end: exact.valueEnd, text: formatValue(value) }];
  }
  // Inside an inline table (or a dotted key holding one): rewrite that one value.
  const holder = pairs.find((p) => startsWith(path, p.path) && p.path.length < path.length);
  if (holder) {
    const next = setIn(getIn(doc, holder.path), path.slice(holder.path.length), value);
    return [{ start: holder.valueStart, end: holder.valueEnd, text: formatValue(next) }];
  }
  if (value === undefined) {
    // A table (and its sub-tables, and dotted keys below it): cut each header's block.
    const edits: Edit[] = [];
    // A block ends after its last key: comments and blank lines after it may introduce the next table.
    for (const h of headers) {
      if (!startsWith(h.path, path)) continue;
      const end = Math.max(h.lineEnd, ...pairs.filter((p) => p.table === h).map((p) => p.lineEnd));
      let start = text.lastIndexOf('\n', h.start - 1) + 1;
      // The blank line that set the table apart goes with it when nothing follows (or another blank does).
      const blankBefore = /(^|\n)\r?\n$/.exec(text.slice(0, start));
      if (blankBefore && blankBefore.index + blankBefore[1].length > 0 && (end === text.length || /^\r?\n/.test(text.slice(end)))) start = blankBefore.index + blankBefore[1].length;
      edits.push({ start, end, text: '' });
    }
    for (const p of pairs) if (startsWith(p.path, path) && !(p.table && startsWith(p.table.path, path))) edits.push({ start: p.lineStart, end: p.lineEnd, text: '' });
    return edits;
  }
  const parentPath = path.slice(0, -1);
  const parent = headers.find((h) => !h.array && samePath(h.path, parentPath));
  if (isPlainObject(value) && !parent && !headers.some((h) => samePath(h.path, path))) {
    const sep = text.length === 0 || /\r?\n\r?\n$/.test(text) ? '' : text.endsWith('\n') ? eol : eol + eol;
    return [{ start: text.length, end: text.length, text: `${sep}${tableText(path, value).replace(/\n/g, eol)}` }];
  }
  const line = (at: number, key: string[]) => {
    const nl = at > 0 && text[at - 1] !== '\n' ? eol : '';
    return [{ start: at, end: at, text: `${nl}${key.map(formatKey).join('.')} = ${formatValue(value)}${eol}` }];
  };
  if (parent || parentPath.length === 0) {
    // After the table's last key (so blank lines and comments before the next table stay where they are).
    const inTable = pairs.filter((p) => (parent ? p.table === parent : p.table === null));
    const at = inTable.length ? inTable[inTable.length - 1].lineEnd : parent ? parent.lineEnd : headers.length ? text.lastIndexOf('\n', headers[0].start - 1) + 1 : text.length;
    return line(at, [path[path.length - 1]]);
  }
  // A table defined by dotted keys (`scheduler.max_concurrency = 2`): one more dotted key beside them.
  const dotted = pairs.filter((p) => startsWith(p.path, parentPath) && (p.table?.path.length ?? 0) < parentPath.length);
  if (dotted.length) {
    const last = dotted[dotted.length - 1];
    return line(last.lineEnd, path.slice(last.table?.path.length ?? 0));
  }
  // No such table yet: a new one at the end of the file.
  return editFor(text, doc, parentPath, setIn(getIn(doc, parentPath), [path[path.length - 1]], value));
}

function applyEdits(text: string, edits: Edit[]): string {
  // From the end backwards, so earlier offsets stay valid.
  for (const e of [...edits].sort((a, b) => b.start - a.start)) text = text.slice(0, e.start) + e.text + text.slice(e.end);
  return text;
}

/** The leaf changes from `before` to `after`: [path, value or undefined for a removal]. */
function changes(before: unknown, after: unknown, path: string[] = []): [string[], unknown][] {
  if (deepEqual(before, after)) return [];
  if (path.length && !(isPlainObject(before) && isPlainObject(after))) return [[path, after]];
  const b = isPlainObject(before) ? before : {};
  const a = isPlainObject(after) ? after : {};
  const out: [string[], unknown][] = [];
  for (const k of Object.keys(a)) out.push(...changes(b[k], a[k], [...path, k]));
  for (const k of Object.keys(b)) if (!(k in a)) out.push([[...path, k], undefined]);
  return out;
}

/**
 * `text` (a TOML document) edited so that it parses to `after`, changing only what differs from what it
 * parses to now. Throws when `text` is not TOML, or when the in-place edit could not reproduce `after`
 * (the caller then decides; nothing is half-written).
 */
export function editToml(text: string, after: Doc): string {
  let doc = (text.trim() ? parseToml(text) : {}) as Doc;
  for (const [path, value] of changes(doc, after)) {
    text = applyEdits(text, editFor(text, doc, path, value));
    doc = setIn(doc, path, value) as Doc;
  }
  let check: unknown;
  try {
    check = parseToml(text);
  } catch (err) {
    throw new Error(`the edited file is not valid TOML: ${(err as Error).message}`);
  }
  if (!sameDocument(check, after)) throw new Error('the edited file does not read back as intended');
  return text;
}
