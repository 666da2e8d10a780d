/**
 * Secrets LightWorker knows by value (gateway keys, tokens, secret-named environment variables),
 * redacted wherever they appear whatever their shape. One registry per process: every engine, runner
 * and face in it shares the same set, and `redactText` consults it on every call.
 */

/** Shorter values are not registered: they would redact common words and numbers. */
export const MIN_SECRET_LENGTH = 8;

/**
 * A word of an environment variable's name that says it holds a secret (OPENAI_API_KEY, GH_TOKEN,
 * NPM_AUTHTOKEN, DB_PASSWORD…). Whole words, so GIT_AUTHOR_NAME or KEYBOARD_LAYOUT are not secrets.
 */
const SECRET_WORD = /^(?:[A-Z0-9]*KEYS?|[A-Z0-9]*TOKENS?|[A-Z0-9]*SECRETS?|[A-Z0-9]*PASSWORDS?|PASSWD|PASS|CREDENTIALS?|AUTH|PRIVATE)$/i;
/** Secret-sounding names that hold paths or sockets, not secrets. */
const NOT_SECRET_NAMES = new Set(['SSH_AUTH_SOCK', 'LIGHTWORKER_REUSE_CLI_AUTH']);

const values = new Set<string>();
/** The same values encoded (base64 at each alignment, hex, URL-encoded): replaced whole, never cut. */
const encoded = new Set<string>();
let pattern: RegExp | null = null;

/** Shorter encoded forms are not registered: a few base64 characters occur by chance. */
const MIN_ENCODED_LENGTH = 10;

/**
 * A value as it appears once encoded: base64 and base64url at each of the 3 byte alignments it can have
 * inside a longer blob (`user:VALUE` in a Basic header), only the characters that depend on the value
 * alone; hex; URL-encoded when that differs.
 */
function encodingsOf(v: string): string[] {
  const bytes = Buffer.from(v, 'utf8');
  const out: string[] = [];
  for (let lead = 0; lead < 3; lead++) {
    const all = Buffer.concat([Buffer.alloc(lead), bytes]);
    // Characters 0..first-1 carry bits of the lead bytes; a partial last group carries bits of what follows.
    const first = [0, 2, 3][lead];
    const full = Math.floor(all.length / 3) * 4 + [0, 1, 2][all.length % 3];
    for (const enc of ['base64', 'base64url'] as const) out.push(all.toString(enc).replace(/=+$/, '').slice(first, full));
  }
  out.push(bytes.toString('hex'), encodeURIComponent(v));
  return out.filter((e) => e.length >= MIN_ENCODED_LENGTH && e !== v);
}

/** Does an environment variable of this name hold a secret? */
export function isSecretName(name: string): boolean {
  return !NOT_SECRET_NAMES.has(name.toUpperCase()) && name.split(/[^A-Za-z0-9]+/).some((word) => SECRET_WORD.test(word));
}

/**
 * A value worth redacting everywhere: mixed character classes (letters and digits, or symbols), or
 * long. `AUTH_MODE=disabled` must not redact every "disabled" in a worker's output; numbers neither.
 */
function looksSecret(v: string): boolean {
  if (/^\d+$/.test(v)) return false;
  if (v.length >= 16) return true;
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((re) => re.test(v)).length;
  return classes >= 2 && !/^[A-Za-z]+$/.test(v);
}

/**
 * Remember secret values so every later `redactText` replaces them. Values shorter than
 * MIN_SECRET_LENGTH, numbers and plain words are ignored. Cheap to call again with known values.
 */
export function registerSecretValues(list: Iterable<string | null | undefined>): void {
  let added = false;
  for (const raw of list) {
    if (typeof raw !== 'string') continue;
    const v = raw.trim();
    if (v.length < MIN_SECRET_LENGTH || !looksSecret(v) || values.has(v)) continue;
    values.add(v);
    // A worker's JSON stream carries the value escaped when it holds quotes or backslashes.
    const escaped = JSON.stringify(v).slice(1, -1);
    if (escaped !== v) values.add(escaped);
    for (const e of encodingsOf(v)) if (!values.has(e)) encoded.add(e);
    added = true;
  }
  if (added) pattern = compile();
}

/**
 * The values of every secret-named variable in `env`, plus the values of the named variables
 * (gateway `key_env`s), whatever their names.
 */
export function secretValuesOfEnv(env: NodeJS.ProcessEnv, alsoNames: Iterable<string> = []): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(env)) if (v && isSecretName(k)) out.push(v);
  for (const k of alsoNames) {
    const v = env[k];
    if (v) out.push(v);
  }
  return out;
}

/** A cut-off piece of a value at either end of a text is redacted from this many characters on. */
const MIN_PIECE = 6;

/**
 * Replace every registered value in `text` with `marker`. One precompiled alternation: linear, cheap
 * without hits. Text cut from a longer output (a tail, a first line) may begin with the end of a value
 * or end with its start: those pieces go too.
 */
export function redactKnownValues(text: string, marker: string): string {
  if (!pattern) return text;
  pattern.lastIndex = 0;
  let out = text.replace(pattern, marker);
  if (out.includes('\n')) out = redactSplitValues(out, marker);
  return redactCutPieces(out, marker);
}

const LINE_BREAK = /\r?\n|(?:\\+r)?\\+n/g;

/**
 * A value printed across two lines (wrapped by a terminal, folded by a tool): a line that ends with the
 * start of a value (MIN_PIECE characters or more) and a next line that begins with the rest of it. Both
 * pieces must be there, so a line ending in six characters that merely begin a value is left alone.
 */
function redactSplitValues(text: string, marker: string): string {
  const cuts: [number, number][] = [];
  LINE_BREAK.lastIndex = 0;
  for (let m = LINE_BREAK.exec(text); m; m = LINE_BREAK.exec(text)) {
    const end = m.index;
    const next = end + m[0].length;
    for (const { piece, value } of prefixesByLast.get(text[end - 1]) ?? []) {
      if (!text.startsWith(piece, end - piece.length)) continue;
      const rest = value.slice(piece.length);
      // The rest may itself go on over further lines: then this line is all of it that fits.
      const lineEnd = text.slice(next).search(/\r?\n|(?:\\+r)?\\+n|$/) + next;
      const onNext = text.slice(next, lineEnd);
      if (!text.startsWith(rest, next) && !(onNext.length >= MIN_PIECE && rest.startsWith(onNext))) continue;
      cuts.push([end - piece.length, end], [next, next + Math.min(rest.length, onNext.length)]);
      break;
    }
  }
  if (!cuts.length) return text;
  let out = '';
  let at = 0;
  for (const [a, b] of cuts.sort((x, y) => x[0] - y[0])) {
    if (a < at) continue;
    out += text.slice(at, a) + marker;
    at = b;
  }
  return out + text.slice(at);
}

function redactCutPieces(text: string, marker: string): string {
  if (text.length < MIN_PIECE) return text;
  let start = 0;
  for (const { piece } of suffixesByFirst.get(text[0]) ?? []) {
    if (text.startsWith(piece)) {
      start = piece.length;
      break;
    }
  }
  let end = text.length;
  for (const { piece } of prefixesByLast.get(text[text.length - 1]) ?? []) {
    if (text.endsWith(piece)) {
      end = text.length - piece.length;
      break;
    }
  }
  if (start === 0 && end === text.length) return text;
  if (start >= end) return marker;
  return (start ? marker : '') + text.slice(start, end) + (end < text.length ? marker : '');
}

/** How many values are registered (for doctor output and tests). */
export function knownSecretCount(): number {
  return values.size;
}

/** Forget every registered value (tests). */
export function clearSecretValues(): void {
  values.clear();
  encoded.clear();
  pattern = null;
  suffixesByFirst = new Map();
  prefixesByLast = new Map();
}

/** Pieces a cut can leave, keyed by the character a text would start / end with; longest first. */
interface Piece {
  piece: string;
  value: string;
}
let suffixesByFirst = new Map<string, Piece[]>();
let prefixesByLast = new Map<string, Piece[]>();

function compile(): RegExp {
  // Longest first, so a value that contains another is replaced whole.
  const sorted = [...values].sort((a, b) => b.length - a.length);
  suffixesByFirst = new Map();
  prefixesByLast = new Map();
  const add = (map: Map<string, Piece[]>, key: string, piece: string, value: string) => {
    const list = map.get(key) ?? [];
    list.push({ piece, value });
    map.set(key, list);
  };
  for (const v of sorted) {
    for (let k = MIN_PIECE; k < v.length; k++) {
      add(suffixesByFirst, v[v.length - k], v.slice(v.length - k), v);
      add(prefixesByLast, v[k - 1], v.slice(0, k), v);
    }
  }
  for (const map of [suffixesByFirst, prefixesByLast]) for (const list of map.values()) list.sort((a, b) => b.piece.length - a.piece.length);
  const all = [...sorted, ...[...encoded].filter((e) => !values.has(e))].sort((a, b) => b.length - a.length);
  return new RegExp(all.map((v) => v.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'), 'g');
}
