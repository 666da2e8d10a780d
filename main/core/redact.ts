/**
 * Secret redaction applied to everything LightWorker persists or shows (events, results, logs, UI).
 * The runner keeps the caller's real text in memory; only copies headed for disk or a screen pass here.
 */

import { redactKnownValues } from './secret-values.js';

export const REDACTED = '[REDACTED]';

interface Rule {
  name: string;
  pattern: RegExp;
  /** Replacement; `$1` etc. keep the non-secret part of a match (a key name, a URL scheme). */
  replace: string | ((match: string, ...groups: string[]) => string);
  /** A cheap test that must pass before the full pattern runs (keeps long lines linear). */
  hint?: RegExp | ((text: string) => boolean);
}

const KEY_HINT = /pass|pwd|secret|token|key|credential/i;

// Order matters: whole-block shapes (PEM) first, then specific token shapes, then generic `key=value` forms.
const RULES: Rule[] = [
  {
    name: 'pem',
    // Key material has no `"`: a key inside a JSON string ends there, so an event line stays parseable.
    pattern: /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[^"]*?(?:-----END \1PRIVATE KEY-----|(?=")|$)/g,
    replace: REDACTED,
  },
  {
    // The end of a key whose BEGIN line was cut off (an output tail): base64 body lines up to END.
    name: 'pem-tail',
    hint: /PRIVATE KEY-----/,
    pattern: /(?:[A-Za-z0-9+/=]{16,76}(?:\\n|\r?\n))+-----END [A-Z0-9 ]*PRIVATE KEY-----/g,
    replace: REDACTED,
  },
  {
    // A private key encoded once more in base64 (a Kubernetes secret, `base64 key.pem`): `LS0tLS1CRUdJTi`
    // is `-----BEGIN`. Only keys: a base64 certificate is not a secret. Its wrapped lines go with it (see
    // `redactContinuations`).
    name: 'pem-base64',
    hint: (t) => t.includes('LS0tLS1CRUdJTi'),
    pattern: /LS0tLS1CRUdJTi[A-Za-z0-9+/=_-]*/g,
    replace: (m) => (/PRIVATE KEY/.test(Buffer.from(m.slice(0, 96), 'base64').toString('latin1')) ? REDACTED : m),
  },
  // A JWT, or what is left of one cut short (header and the start of its payload).
  { name: 'jwt', hint: /eyJ/, pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?/g, replace: REDACTED },
  // Prefixed tokens: not after a letter or digit, but after `_` or `-` too (a token inside a file name,
  // `notes_ghp_….txt`), where `\b` would not start a match.
  { name: 'anthropic', pattern: /(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{16,}/g, replace: REDACTED },
  { name: 'openai', pattern: /(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, replace: REDACTED },
  { name: 'stripe', pattern: /(?<![A-Za-z0-9])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/g, replace: REDACTED },
  { name: 'github', pattern: /(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/g, replace: REDACTED },
  { name: 'gitlab', pattern: /(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}/g, replace: REDACTED },
  { name: 'google', pattern: /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9])/g, replace: REDACTED },
  { name: 'slack', pattern: /(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}/g, replace: REDACTED },
  { name: 'huggingface', pattern: /(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}/g, replace: REDACTED },
  { name: 'aws-access-key', pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}(?![A-Za-z0-9])/g, replace: REDACTED },
  {
    // Azure: a connection string's `AccountKey=<base64>` (storage) or `SharedAccessKey=` (Service Bus), its
    // `SharedAccessSignature=sv=…&sig=…`, and the `sig=` of a SAS URL (`…blob.core.windows.net/c/f?sv=…&sig=…`).
    // One rule, one case-sensitive hint (as Azure writes them): each hint scans every line of output, and
    // with /i this one cost 5% of the redactor's time.
    name: 'azure',
    hint: /AccountKey|SharedAccess|sig=/,
    pattern: /(\b(?:AccountKey|SharedAccessKey)\s*=\s*)(?!\[REDACTED\])[A-Za-z0-9+/]{16,}={0,2}|(\bSharedAccessSignature\s*=\s*|[?&;]sig=)(?!\[REDACTED\])[^;\s"'<>&]{16,}/gi,
    replace: (_m, key: string | undefined, sas: string | undefined) => `${key ?? sas}${REDACTED}`,
  },
  {
    name: 'aws-secret',
    hint: /aws_secret/i,
    pattern: /(aws_secret_access_key\s*[=:]\s*["']?)[A-Za-z0-9/+=]{40}/gi,
    replace: `$1${REDACTED}`,
  },
  {
    // An unlabelled AWS secret access key: 40 base64 characters standing alone (longer base64, such as
    // sha512 integrity hashes, is not one). Git SHAs (hex) and identifiers are left alone: see
    // `looksLikeAwsSecret`.
    name: 'aws-secret-unlabelled',
    hint: hasBase64Run40,
    pattern: /(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
    replace: (m) => (looksLikeAwsSecret(m) ? REDACTED : m),
  },
  { name: 'bearer', hint: /Bearer|Token/, pattern: /(\b(?:Bearer|Token)\s+)[A-Za-z0-9._~+/=-]{12,}/g, replace: `$1${REDACTED}` },
  {
    name: 'basic-auth-header',
    pattern: /(\bAuthorization\s*[:=]\s*["']?Basic\s+)[A-Za-z0-9+/=]{8,}/gi,
    replace: `$1${REDACTED}`,
  },
  {
    name: 'url-credentials',
    hint: /:\/\//,
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@"'<>]+:)[^\s@/"'<>]+@/gi,
    replace: `$1${REDACTED}@`,
  },
  {
    // "api_key": "…", 'password': '…', client_secret: "…" in JSON, YAML or code.
    name: 'quoted-assignment',
    hint: KEY_HINT,
    pattern:
      /((["']?)[A-Za-z0-9_.-]{0,64}(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)\2\s*[:=]\s*)(["'])(?!\[REDACTED\])[^"'\n]{4,}\3/gi,
    replace: `$1$3${REDACTED}$3`,
  },
  {
    // password=hunter2, API_KEY=abc… (env files, query strings, command lines).
    name: 'bare-assignment',
    hint: KEY_HINT,
    pattern:
      /(\b[A-Za-z0-9_.-]{0,64}(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key)\s*=\s*)(?!\[REDACTED\])(?!["'])[^\s&;,"']{4,}/gi,
    replace: `$1${REDACTED}`,
  },
];

/**
 * Random base64 switches between upper case, lower case and digits about 23 times in 40
 * characters; words, paths and camelCase identifiers rarely 14 times (10 when the value has a `/`
 * or `+` and no plain-word path segment). Hex (git SHAs) has no upper
 * case and never matches.
 */
function looksLikeAwsSecret(s: string): boolean {
  if (!/[A-Z]/.test(s) || !/[a-z]/.test(s) || !/[0-9]/.test(s)) return false;
  // `/` and `+` are skipped: a path's separators are not randomness.
  let switches = 0;
  let prev = -1;
  for (let i = 0; i < s.length; i++) {
    const c = charClass(s.charCodeAt(i));
    if (c === 3) continue;
    if (prev !== -1 && c !== prev) switches++;
    prev = c;
  }
  // A key with `/` or `+` (as most are) needs fewer switches, unless a segment is a plain word (a path).
  if (/[/+]/.test(s)) return switches >= 10 && !s.split('/').some((seg) => /^[a-z]{4,}$/.test(seg));
  return switches >= 14;
}

/**
 * Does `text` hold a run of exactly 40 base64 characters? One linear pass over char codes: the
 * pattern itself would rescan every word up to 40 times, and this rule runs on every line of output.
 */
function hasBase64Run40(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 43 || c === 47) run++;
    else {
      if (run === 40) return true;
      run = 0;
    }
  }
  return run === 40;
}

function charClass(c: number): number {
  if (c >= 65 && c <= 90) return 0;
  if (c >= 97 && c <= 122) return 1;
  if (c >= 48 && c <= 57) return 2;
  return 3;
}

/**
 * Replace every secret in `text` with `[REDACTED]`: the values registered in core/secret-values
 * (gateway keys, tokens, secret-named environment variables) whatever their shape, then every known
 * secret shape. Idempotent.
 */
export function redactText(text: string): string {
  let out = redactKnownValues(text, REDACTED);
  for (const rule of RULES) {
    if (rule.hint && !(typeof rule.hint === 'function' ? rule.hint(out) : rule.hint.test(out))) continue;
    out = out.replace(rule.pattern, rule.replace as string);
  }
  return redactContinuations(out);
}

/**
 * A secret that runs to the end of a line may go on at the start of the next: a PEM body, a base64 blob
 * wrapped at 76 columns, a long token wrapped by a terminal. So after a `[REDACTED]` that ends a line,
 * the next line's leading run of token characters is redacted too when it looks random (see
 * `looksContinued`), and so on down the lines. Lines end with a newline or, inside a JSON string, `\n`
 * (`\\n` in a JSON string inside another: a worker's final answer in its event stream).
 */
const CONTINUED = /\[REDACTED\]((?:(?:\r?\n|(?:\\+r)?\\+n)[+ ]?[A-Za-z0-9_+/=.-]+(?=$|[\s"]|\\+[nr]))+)/g;
const NEXT_LINE = /(\r?\n|(?:\\+r)?\\+n)([+ ]?)([A-Za-z0-9_+/=.-]+)/g;

function redactContinuations(text: string): string {
  if (!text.includes(REDACTED) || (!text.includes(REDACTED + '\n') && !text.includes(REDACTED + '\r') && !text.includes(REDACTED + '\\'))) return text;
  return text.replace(CONTINUED, (_m, chain: string) => {
    let out = REDACTED;
    let used = 0;
    NEXT_LINE.lastIndex = 0;
    for (let m = NEXT_LINE.exec(chain); m && m.index === used; m = NEXT_LINE.exec(chain)) {
      if (!looksContinued(m[3])) break;
      out += m[1] + m[2] + REDACTED;
      used = m.index + m[0].length;
    }
    return out + chain.slice(used);
  });
}

/**
 * Does a run at the start of a line look like the rest of a secret rather than text? Random base64 or a
 * token's tail has digits, `+`/`=`, or mixed case; a word, a capitalised word or a path does not.
 */
function looksContinued(run: string): boolean {
  if (run.length < 4) return false;
  if (run.includes('/') && run.split('/').some((seg) => /^[a-z]{4,}$/.test(seg))) return false;
  const rest = run.slice(1);
  return /[0-9+=]/.test(run) || (/[a-z]/.test(rest) && /[A-Z]/.test(rest));
}

/** True when `text` contains something the redactor would remove. */
export function containsSecret(text: string): boolean {
  return redactText(text) !== text;
}

/** Deep-redact any JSON-like value: strings are redacted, and so are values under secret-looking keys. */
export function redactValue<T>(value: T): T {
  return redactDeep(value, 0) as T;
}

const NOT_IDENTIFIER = /[^A-Za-z]/;
const SECRET_KEY = /^(?:.*[_-])?(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|authorization)$/i;

/**
 * Copy on write: a value with nothing to redact comes back as it is (most event payloads: a leader redacts
 * ten per task, and copying every one of them was a good part of its garbage, measured in a 200-task drain, npm run bench).
 */
function redactDeep(value: unknown, depth: number): unknown {
  if (depth > 64) return value;
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const r = redactDeep(v, depth + 1);
      if (out === null && r !== v) out = value.slice(0, i);
      if (out !== null) out.push(r);
    }
    return out ?? value;
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    let out: Record<string, unknown> | null = null;
    for (let i = 0; i < entries.length; i++) {
      const [k, v] = entries[i];
      const r = typeof v === 'string' && v.length > 0 && SECRET_KEY.test(k) ? REDACTED : redactDeep(v, depth + 1);
      // A key can hold a secret too (a file name in `{ "notes_ghp_….txt": … }`). Not checked: short keys and
      // plain-letter identifiers (`inputTokens`, `changedFiles`), which every event payload is made of.
      const rk = k.length >= 8 && (k.length >= 16 || NOT_IDENTIFIER.test(k)) ? redactText(k) : k;
      if (out === null && (r !== v || rk !== k)) {
        out = {};
        for (let j = 0; j < i; j++) out[entries[j][0]] = entries[j][1];
      }
      if (out !== null) out[rk] = r;
    }
    return out ?? value;
  }
  return value;
}

const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;
const PEM_END = /-----END [A-Z0-9 ]*PRIVATE KEY-----/;
/** PEM lines are at most 64 (76 for some tools) characters; a key of 16 KiB is under 300 lines. */
const PEM_MAX_LINES = 400;

/**
 * A redactor for text that arrives one line at a time (a worker's stdout): a private key printed over
 * several lines has its BEGIN and END on different lines, so no single line matches the PEM rule.
 * After a BEGIN line every base64 run of 16+ characters is redacted until the END line (or a bound of
 * lines), leaving the rest of each line (JSON quotes and braces of an event stream) intact.
 */
export function createLineRedactor(): (line: string) => string {
  let inKey = 0;
  let afterSecret = false;
  return (line) => {
    // Nothing this short is, or goes on, a secret (a `yes` flood prints 100 million of them).
    if (line.length < 4 && inKey === 0) {
      afterSecret = false;
      return line;
    }
    let out = line;
    // The line before ended with a secret: this one may begin with the rest of it.
    if (afterSecret) out = redactContinuations(REDACTED + '\n' + out).slice(REDACTED.length + 1);
    if (inKey > 0) {
      const end = PEM_END.exec(out);
      const body = end ? out.slice(0, end.index) : out;
      out = body.replace(/[A-Za-z0-9+/=]{16,}/g, REDACTED) + (end ? out.slice(end.index) : '');
      inKey = end || inKey >= PEM_MAX_LINES ? 0 : inKey + 1;
    }
    const begin = PEM_BEGIN.exec(out);
    if (begin && !PEM_END.test(out.slice(begin.index))) inKey = 1;
    out = redactText(out);
    afterSecret = out.trimEnd().endsWith(REDACTED);
    return out;
  };
}
