import { AppError } from '../../core/errors.js';
import { redactText } from '../../core/redact.js';
import type { ForgeTarget } from './types.js';

/** A forge call's answer: JSON or text, with the response headers the caller needs. */
export interface ForgeResponse<T> {
  status: number;
  body: T;
  headers: Headers;
}

const TIMEOUT_MS = 30_000;

/** The header each forge reads a token from (never a URL, never argv). */
function authHeaders(t: ForgeTarget): Record<string, string> {
  if (t.kind === 'gitlab') return { 'PRIVATE-TOKEN': t.token };
  if (t.kind === 'gitea') return { Authorization: `token ${t.token}` };
  return { Authorization: `Bearer ${t.token}`, 'X-GitHub-Api-Version': '2022-11-28' };
}

/** How long the forge asks us to wait, in ms: Retry-After (seconds or a date), else GitHub's reset time. */
export function retryAfterMs(h: Headers, now = Date.now()): number | null {
  const ra = h.get('retry-after');
  if (ra) {
    const s = Number(ra);
    if (Number.isFinite(s)) return Math.max(0, s * 1000);
    const at = Date.parse(ra);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  const reset = Number(h.get('x-ratelimit-reset') ?? h.get('ratelimit-reset'));
  if (Number.isFinite(reset) && reset > 0) return Math.max(0, reset * 1000 - now);
  return null;
}

function forgeMessage(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 300);
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    const parts = [b.message, b.error, b.error_description].filter((x) => typeof x === 'string' || Array.isArray(x));
    const errs = Array.isArray(b.errors) ? b.errors.map((e) => (typeof e === 'string' ? e : ((e as Record<string, unknown>)?.message ?? JSON.stringify(e)))) : [];
    return [...parts.map((p) => (Array.isArray(p) ? p.join('; ') : String(p))), ...errs.map(String)].join('; ').slice(0, 300);
  }
  return '';
}

/**
 * One REST call to the forge. Errors name what to fix: 401 the token (and where it came from), 403/429 with
 * a rate limit `rate_limited` carrying retryAfterMs, 404 the repository or token's access, 422 the forge's
 * own reason; an unreachable forge is `unavailable`. Every message is redacted (it never holds the token).
 */
export async function forgeCall<T = unknown>(t: ForgeTarget, method: string, path: string, opts: { body?: unknown; text?: boolean; what: string } = { what: '' }): Promise<ForgeResponse<T>> {
  const url = `${t.apiUrl.replace(/\/+$/, '')}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { Accept: opts.text ? 'text/plain, */*' : 'application/json', ...(opts.body !== undefined ? { 'Content-Type': 'application/json' } : {}), 'User-Agent': 'lightworker', ...authHeaders(t) },
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
      redirect: 'follow',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new AppError('unavailable', redactText(`${t.forge}: could not reach ${t.apiUrl} (${opts.what}): ${(err as Error).message}; check the network or [forges.${t.forge}] api_url`), { forge: t.forge });
  }
  const raw = await res.text();
  let body: unknown = raw;
  if (!opts.text && raw) {
    try {
      body = JSON.parse(raw);
    } catch {
      body = raw;
    }
  }
  if (res.ok) return { status: res.status, body: body as T, headers: res.headers };
  const said = forgeMessage(body);
  const ctx = { forge: t.forge, status: res.status };
  const what = `${t.forge} ${opts.what}`;
  const limited = res.status === 429 || (res.status === 403 && (res.headers.get('x-ratelimit-remaining') === '0' || res.headers.has('retry-after')));
  if (limited) {
    const wait = retryAfterMs(res.headers);
    throw new AppError('rate_limited', redactText(`${what}: rate limited (${res.status})${wait !== null ? `; try again in ${Math.ceil(wait / 1000)} s` : ''}${said ? `: ${said}` : ''}`), { ...ctx, retryAfterMs: wait });
  }
  if (res.status === 401) throw new AppError('forbidden', redactText(`${what}: the forge refused the token from ${t.tokenSource} (401)${said ? `: ${said}` : ''}; set a valid token there`), ctx);
  if (res.status === 403) throw new AppError('forbidden', redactText(`${what}: the token from ${t.tokenSource} may not do this (403)${said ? `: ${said}` : ''}; give it write access to ${t.repo}`), ctx);
  if (res.status === 404) throw new AppError('not_found', redactText(`${what}: ${t.repo} or what was asked is not found at ${t.apiUrl} (404)${said ? `: ${said}` : ''}; check the remote URL, [forges.${t.forge}] repo, and that the token from ${t.tokenSource} can see it`), ctx);
  if (res.status === 409 || res.status === 422) throw new AppError('conflict', redactText(`${what}: the forge refused it (${res.status})${said ? `: ${said}` : ''}`), ctx);
  throw new AppError('unavailable', redactText(`${what}: the forge answered ${res.status}${said ? `: ${said}` : ''}`), ctx);
}

/** `owner/name` → the two parts, each URL-encoded for a path. */
export function ownerAndName(repo: string): [string, string] {
  const i = repo.lastIndexOf('/');
  return [encodeURIComponent(repo.slice(0, i)), encodeURIComponent(repo.slice(i + 1))];
}

/** The last `max` bytes of a log, at a line start where one is near. */
export function logTail(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const cut = Buffer.from(text).subarray(-max).toString('utf8');
  const nl = cut.indexOf('\n');
  return nl >= 0 && nl < 200 ? cut.slice(nl + 1) : cut;
}
