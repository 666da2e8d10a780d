import { AppError } from './errors.js';

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * An age such as `30d`, `12h`, `90m`, `2w` or `45s`, in milliseconds. Anything else (a bare number, a
 * negative or fractional count, another unit) is an `invalid_input` error naming `field` and the value.
 */
export function parseAge(text: string, field: string): number {
  const m = /^\s*(\d{1,6})\s*([smhdw])\s*$/.exec(text);
  if (!m) throw new AppError('invalid_input', `${field}: expected an age like 30d, 12h, 90m, 2w or 45s, got "${text}"`, { field });
  return Number(m[1]) * UNITS[m[2]];
}
