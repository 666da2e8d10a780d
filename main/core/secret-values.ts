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
let pattern: RegExp | null = null;

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
  return redactCutPieces(text.replace(pattern, marker), marker);
}

function redactCutPieces(text: string, marker: string): string {
  if (text.length < MIN_PIECE) return text;
  let start = 0;
  for (const piece of suffixesByFirst.get(text[0]) ?? []) {
    if (text.startsWith(piece)) {
      start = piece.length;
      break;
    }
  }
  let end = text.length;
  for (const piece of prefixesByLast.get(text[text.length - 1]) ?? []) {
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
  pattern = null;
  suffixesByFirst = new Map();
  prefixesByLast = new Map();
}

/** Pieces a cut can leave, keyed by the character a text would start / end with; longest first. */
let suffixesByFirst = new Map<string, string[]>();
let prefixesByLast = new Map<string, string[]>();

function compile(): RegExp {
  // Longest first, so a value that contains another is replaced whole.
  const sorted = [...values].sort((a, b) => b.length - a.length);
  suffixesByFirst = new Map();
  prefixesByLast = new Map();
  const add = (map: Map<string, string[]>, key: string, piece: string) => {
    const list = map.get(key) ?? [];
    list.push(piece);
    map.set(key, list);
  };
  for (const v of sorted) {
    for (let k = MIN_PIECE; k < v.length; k++) {
      add(suffixesByFirst, v[v.length - k], v.slice(v.length - k));
      add(prefixesByLast, v[k - 1], v.slice(0, k));
    }
  }
  for (const map of [suffixesByFirst, prefixesByLast]) for (const list of map.values()) list.sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map((v) => v.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'), 'g');
}
