import { redactText } from '../core/redact.js';

/** The CLI's only writers: stdout for results, stderr for diagnostics. */
export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : text + '\n');
}

/** Diagnostics are redacted: they may quote a worker's output, and `run`'s stderr is kept in logs/runner.log. */
export function err(text: string): void {
  text = redactText(text);
  process.stderr.write(text.endsWith('\n') ? text : text + '\n');
}

export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

/** A plain aligned table; the last column may be long. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

export function ago(ms: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}
