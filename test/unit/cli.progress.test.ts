import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createStatusLine, describeCounts, formatElapsed } from '../../main/cli/progress.js';

/** A stand-in for process.stderr: a terminal of `columns` or a pipe. */
function stream(tty: boolean, columns = 40) {
  const chunks: string[] = [];
  return { chunks, s: { isTTY: tty, columns, write: (c: string) => (chunks.push(c), true) } as unknown as NodeJS.WriteStream };
}

describe('status line', () => {
  // TERM=dumb (some CI) means no cursor control; these cases are about a real terminal.
  let term: string | undefined;
  beforeEach(() => {
    term = process.env.TERM;
    process.env.TERM = 'xterm';
  });
  afterEach(() => {
    if (term === undefined) delete process.env.TERM;
    else process.env.TERM = term;
  });

  it('on a terminal redraws in place, cut to the width, and notes print above it', () => {
    const { chunks, s } = stream(true, 30);
    const line = createStatusLine({ stream: s, tickMs: 60_000 });
    line.set('leading · 12 running, 3 queued, 1 awaiting approval');
    expect(chunks[0].startsWith('\r\x1b[2K')).toBe(true);
    expect(chunks[0].length - '\r\x1b[2K'.length).toBe(29); // one column short of the width
    expect(chunks[0].endsWith('…')).toBe(true);
    line.note('01J… completed');
    expect(chunks[1]).toBe('\r\x1b[2K01J… completed\n');
    expect(chunks[2].startsWith('\r\x1b[2Kleading')).toBe(true); // the status comes back below
    line.stop();
    expect(chunks.at(-1)).toBe('\r\x1b[2K');
    line.set('after stop');
    expect(chunks.at(-1)).toBe('\r\x1b[2K');
  });

  it('in a pipe prints each new status once, as a plain line', () => {
    const { chunks, s } = stream(false);
    const line = createStatusLine({ stream: s });
    line.set('a');
    line.set('a');
    line.set('b');
    line.note('n');
    line.stop();
    expect(chunks.join('')).toBe('a\nb\nn\n');
  });

  it('--quiet writes nothing', () => {
    const { chunks, s } = stream(true);
    const line = createStatusLine({ stream: s, quiet: true });
    line.set('x');
    line.note('y');
    line.stop();
    expect(chunks).toEqual([]);
  });

  it('formats counts busiest first and elapsed times compactly', () => {
    expect(describeCounts({ completed: 2, running: 1, awaiting_approval: 1 })).toBe('1 running, 1 awaiting approval, 2 completed');
    expect(describeCounts({})).toBe('nothing');
    expect([formatElapsed(5_400), formatElapsed(125_000), formatElapsed(3_720_000)]).toEqual(['5s', '2m05s', '1h02m']);
  });
});
