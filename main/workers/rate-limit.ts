/**
 * When a rate-limited provider lets a worker try again, as each CLI says it (ms since the epoch), or null
 * when its output names no time. Seen in the CLIs' own words:
 * - Claude Code: `Claude AI usage limit reached|1767225600` (epoch seconds), `limit reached ∙ resets 3pm`
 * - Codex: `try again in 4 days 5 hours 3 minutes`, `try again at Dec 2nd, 2025 3:04 PM`, and the OpenAI API's
 *   `Please try again in 6m0s` / `in 1.5s` / `in 20ms`
 * - Gemini CLI and other Google APIs: `Please retry in 37.5s`, `"retryDelay": "37s"`
 * - any HTTP client that prints the header: `Retry-After: 30`
 * The result is kept between one second and a week from `now`: a garbled time never pauses a worker for ever.
 */
export function retryAtOf(text: string, now = Date.now()): number | null {
  const at = parseRetryAt(text, now);
  if (at === null || !Number.isFinite(at)) return null;
  return Math.min(now + WEEK_MS, Math.max(now + 1000, Math.round(at)));
}

const WEEK_MS = 7 * 86_400_000;
const UNIT_MS: Record<string, number> = { ms: 1, millisecond: 1, s: 1000, sec: 1000, second: 1000, m: 60_000, min: 60_000, minute: 60_000, h: 3_600_000, hr: 3_600_000, hour: 3_600_000, d: 86_400_000, day: 86_400_000 };
const DURATION = /(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b/gi;

/** `4 days 5 hours`, `6m0s`, `1.5s`, `20ms` → milliseconds (null when no part parses). */
function durationMs(s: string): number | null {
  let ms = 0;
  let any = false;
  // `6m0s`: parts written together; a word boundary only after the last, so split them first.
  for (const m of s.replace(/(\d)([a-z]+)(?=\d)/gi, '$1$2 ').matchAll(DURATION)) {
    const unit = m[2].toLowerCase().replace(/s$/, '') || 's';
    const per = UNIT_MS[unit] ?? UNIT_MS[m[2].toLowerCase()];
    if (per === undefined) continue;
    ms += Number(m[1]) * per;
    any = true;
  }
  return any ? ms : null;
}

/** The next `h[:mm] am|pm` (local time) after `now`. */
function nextClock(h: number, min: number, ampm: string | undefined, now: number): number | null {
  if (h > 23 || min > 59) return null;
  let hour = h;
  if (ampm) hour = (h % 12) + (ampm.toLowerCase() === 'pm' ? 12 : 0);
  const d = new Date(now);
  d.setHours(hour, min, 0, 0);
  if (d.getTime() <= now) d.setDate(d.getDate() + 1);
  return d.getTime();
}

function parseRetryAt(text: string, now: number): number | null {
  const epoch = /limit reached\|(\d{9,13})\b/i.exec(text);
  if (epoch) return Number(epoch[1]) * (epoch[1].length > 11 ? 1 : 1000);
  const header = /retry[-_ ]after["':\s]+(\d+(?:\.\d+)?)\s*(ms)?\b/i.exec(text);
  if (header) return now + Number(header[1]) * (header[2] ? 1 : 1000);
  const delay = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/i.exec(text);
  if (delay) return now + Number(delay[1]) * 1000;
  const inDuration = /(?:try again|retry)\s+in\s+((?:\d+(?:\.\d+)?\s*[a-z]+[\s,]*(?:and\s+)?)+)/i.exec(text);
  if (inDuration) {
    const ms = durationMs(inDuration[1]);
    if (ms !== null) return now + ms;
  }
  const atWhen = /(?:try again|retry|resets?)\s+(?:at|after|on)?\s*([A-Z][a-z]{2,8}\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4},? \d{1,2}:\d{2}(?::\d{2})?\s*(?:[AP]M)?|\d{4}-\d{2}-\d{2}[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)/i.exec(text);
  if (atWhen) {
    const t = Date.parse(atWhen[1].replace(/(\d)(st|nd|rd|th)/, '$1').replace(/,(?= \d{1,2}:)/, ''));
    if (Number.isFinite(t)) return t;
  }
  const clock = /(?:resets?|try again)\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b/i.exec(text);
  if (clock) return nextClock(Number(clock[1]), Number(clock[2] ?? 0), clock[3], now);
  return null;
}
