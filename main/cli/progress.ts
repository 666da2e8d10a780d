import { redactText } from '../core/redact.js';

/**
 * A one-line live status on stderr for commands that wait (`run`, `wait`, `orchestrate --wait`,
 * `compare --wait`). On a terminal the line is redrawn in place (with the elapsed time ticking); when
 * stderr is a pipe or a file each new status is one plain line, printed only when it changes, with no
 * escape codes. stdout is never touched, so `--json` output stays parsable.
 */
export interface StatusLine {
  /** The current status (without the elapsed time, which the line adds). */
  set(text: string): void;
  /** A line that stays (a task ended): printed above the live status. */
  note(text: string): void;
  /** Clear the live line and stop the clock. Idempotent. */
  stop(): void;
}

export interface StatusLineOptions {
  quiet?: boolean;
  stream?: NodeJS.WriteStream;
  /** Milliseconds between redraws of the clock on a terminal. */
  tickMs?: number;
}

const CLEAR = '\r\x1b[2K';

/** "12s", "3m05s", "1h02m". */
export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
}

/** A terminal that understands cursor control (TERM=dumb does not). */
function isLiveTerminal(stream: NodeJS.WriteStream): boolean {
  return Boolean(stream.isTTY) && process.env.TERM !== 'dumb';
}

/** Create the status line for one command; `quiet` makes every method a no-op. */
export function createStatusLine(opts: StatusLineOptions = {}): StatusLine {
  const stream = opts.stream ?? process.stderr;
  if (opts.quiet) return { set() {}, note() {}, stop() {} };
  const started = Date.now();
  let text = '';
  let printed = '';
  let stopped = false;
  if (!isLiveTerminal(stream)) {
    return {
      set(t) {
        text = redactText(t);
        if (stopped || text === printed) return;
        printed = text;
        stream.write(`${text}\n`);
      },
      note(t) {
        if (!stopped) stream.write(`${redactText(t)}\n`);
      },
      stop() {
        stopped = true;
      },
    };
  }
  const draw = () => {
    if (stopped || !text) return;
    const line = `${text} · ${formatElapsed(Date.now() - started)}`;
    // One column short of the width: writing the last column makes some terminals wrap.
    const width = Math.max(20, (stream.columns || 80) - 1);
    stream.write(CLEAR + (line.length > width ? line.slice(0, width - 1) + '…' : line));
  };
  const clock = setInterval(draw, opts.tickMs ?? 1000);
  clock.unref();
  // A process.exit() mid-wait (a second Ctrl-C, --timeout's backstop) must not leave the prompt after a
  // half-drawn status.
  const clearAtExit = () => {
    if (!stopped && text) stream.write(CLEAR);
  };
  process.once('exit', clearAtExit);
  return {
    set(t) {
      text = redactText(t);
      draw();
    },
    note(t) {
      if (stopped) return;
      stream.write(`${CLEAR}${redactText(t)}\n`);
      draw();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(clock);
      process.off('exit', clearAtExit);
      if (text) stream.write(CLEAR);
    },
  };
}

/** "2 running, 1 queued, 3 completed" from a count per status, busiest states first. */
export function describeCounts(counts: Partial<Record<string, number>>): string {
  const order = ['starting', 'running', 'verifying', 'queued', 'awaiting_approval', 'completed', 'accepted', 'failed', 'timed_out', 'cancelled', 'blocked', 'orphaned'];
  const keys = [...order.filter((k) => counts[k]), ...Object.keys(counts).filter((k) => !order.includes(k) && counts[k])];
  return keys.map((k) => `${counts[k]} ${k.replace('_', ' ')}`).join(', ') || 'nothing';
}
