import { readFileSync } from 'node:fs';

/**
 * Whether a CLI's login file holds a credential that CLI can use, judged by its shape alone (nothing is
 * sent anywhere): an empty `{}`, a truncated write or a file of another CLI would otherwise pass for a
 * login, and the task would fail only after the CLI's own retries and lookups (~20 s). The shapes are the
 * ones each CLI writes: Codex `{"OPENAI_API_KEY": …}` or `{"tokens": {"access_token"|"refresh_token": …}}`;
 * Claude Code `{"claudeAiOauth": {"accessToken"|"refreshToken": …}}`; OpenCode `{"<provider>": {"type":
 * "api"|"oauth"|"wellknown", "key"|"access"|"refresh"|"token": …}}`.
 */

const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const obj = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

const SHAPES: Record<string, { check(doc: Record<string, unknown>): boolean; expected: string }> = {
  codex: {
    check: (d) => str(d.OPENAI_API_KEY) || (obj(d.tokens) && (str(d.tokens.access_token) || str(d.tokens.refresh_token))),
    expected: 'OPENAI_API_KEY or tokens.access_token / tokens.refresh_token',
  },
  'claude-code': {
    check: (d) => obj(d.claudeAiOauth) && (str(d.claudeAiOauth.accessToken) || str(d.claudeAiOauth.refreshToken)),
    expected: 'claudeAiOauth.accessToken or claudeAiOauth.refreshToken',
  },
  opencode: {
    check: (d) => Object.values(d).some((p) => obj(p) && str(p.type) && [p.key, p.access, p.refresh, p.token].some(str)),
    expected: 'a provider entry with its type and a key or token',
  },
};

/** What is wrong with `worker`'s login file at `path` (it exists), or null when its shape is usable. */
export function loginFileProblem(worker: string, path: string): string | null {
  const shape = SHAPES[worker];
  if (!shape) return null;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  if (!text.trim()) return 'is empty';
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return 'is not valid JSON (a cut-off or hand-edited file?)';
  }
  if (!obj(doc)) return 'is not a JSON object';
  if (!Object.keys(doc).length) return 'is an empty JSON object ({}): it holds no token or key';
  return shape.check(doc) ? null : `holds no credential (expected ${shape.expected})`;
}
