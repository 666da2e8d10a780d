import type { VerificationSummary } from '../commands/tasks.js';

/** Lines of output shown per command: a passing command's tail is context, a failing one's is the story. */
const TAIL_LINES = { passed: 8, failed: 30 };

/** "850 ms", "12.3 s", "2m04s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

export function commandText(command: unknown): string {
  return Array.isArray(command) ? command.map((a) => (/^[\w@%+=:,./-]+$/.test(String(a)) ? String(a) : JSON.stringify(a))).join(' ') : String(command);
}

/**
 * A verification run as a person reads it: per command the command line, its outcome (exit code or
 * timeout), how long it took, and the end of its output as plain lines (never JSON with literal `\n`).
 */
export function verificationLines(v: VerificationSummary): string[] {
  const state = v.ok === null ? 'running' : v.ok ? 'passed' : 'FAILED';
  const lines = [`verification (attempt ${v.attempt}): ${state}${v.commands.length ? '' : ' (no command ran yet)'}`];
  for (const c of v.commands) {
    const failed = c.timedOut || c.exitCode !== 0;
    const outcome = c.timedOut ? 'timed out' : c.exitCode === null ? 'killed' : `exit ${c.exitCode}`;
    lines.push(`  ${failed ? '✗' : '✓'} $ ${commandText(c.command)}`, `    ${outcome} · ${formatDuration(c.durationMs)}`);
    const output = c.outputTail.replace(/\r\n?/g, '\n').trimEnd();
    if (!output) {
      lines.push('    (no output)');
      continue;
    }
    const all = output.split('\n');
    const keep = failed ? TAIL_LINES.failed : TAIL_LINES.passed;
    if (all.length > keep) lines.push(`    │ … ${all.length - keep} earlier line${all.length - keep === 1 ? '' : 's'}${v.log ? ` (full log: ${v.log})` : ''}`);
    lines.push(...all.slice(-keep).map((l) => `    │ ${l}`));
  }
  return lines;
}
