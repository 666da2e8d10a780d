import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MERGED_TEXT_CHARS, OutputBudget } from '../../main/runner/output-budget.js';
import { RawLog } from '../../main/runner/raw-log.js';
import type { NormalizedEvent } from '../../main/workers/adapter.js';
import { tempDir } from '../helpers/env.js';

const msg = (text: string): NormalizedEvent => ({ type: 'worker.message', text });
const usage = (n: number): NormalizedEvent => ({ type: 'worker.usage', inputTokens: n, cachedTokens: 0, outputTokens: n, model: 'm' });

describe('OutputBudget', () => {
  it('merges plain lines that arrive together, up to the merged size, and keeps every line', () => {
    const b = new OutputBudget(100);
    const pending: NormalizedEvent[] = [];
    for (let i = 0; i < 1000; i++) b.take([msg(`line ${i} of the build`)], pending, true);
    b.seal();
    expect(pending.length).toBeGreaterThan(1);
    expect(pending.length).toBeLessThan(10);
    const texts = pending.map((e) => (e as { text: string }).text);
    expect(texts.every((t) => t.length <= MERGED_TEXT_CHARS)).toBe(true);
    expect(texts.join('\n').split('\n')).toHaveLength(1000);
  });

  it('does not merge JSON messages, nor across a handed-over batch', () => {
    const b = new OutputBudget(100);
    let pending: NormalizedEvent[] = [];
    b.take([msg('a')], pending, false);
    b.take([msg('b')], pending, false);
    expect(pending).toHaveLength(2);
    b.take([msg('c')], pending, true);
    b.seal();
    pending = [];
    b.take([msg('d')], pending, true);
    expect(pending).toEqual([msg('d')]);
  });

  it('past the cap drops output events, counts them, sums usage and keeps a few lifecycle events', () => {
    const b = new OutputBudget(10);
    const pending: NormalizedEvent[] = [];
    for (let i = 0; i < 50; i++) b.take([msg(`m${i}`), usage(1)], pending, false);
    b.take([{ type: 'worker.completed', text: 'done' }], pending, false);
    const kept = pending.filter((e) => e.type === 'worker.message');
    expect(kept).toHaveLength(10);
    expect(b.dropped.events).toBe(40);
    expect(b.dropped.chars).toBe(40 * 3);
    expect(pending.at(-1)).toEqual({ type: 'worker.completed', text: 'done' });
    // Usage past the cap is not lost: one summed event.
    const stored = pending.filter((e) => e.type === 'worker.usage').length;
    const summed = b.takeSummedUsage();
    expect(summed).toHaveLength(1);
    expect(stored + (summed[0] as { inputTokens: number }).inputTokens).toBe(50);
    expect(b.takeSummedUsage()).toEqual([]);
  });
});

describe('RawLog', () => {
  let cleanup: (() => void) | undefined;
  afterEach(() => cleanup?.());

  it('keeps the first and last halves of its cap and says what it left out', () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const path = join(t.dir, 'stdout.jsonl');
    const log = new RawLog(path, 100_000);
    for (let i = 0; i < 100_000; i++) {
      log.add(`line ${i}`);
      if (i % 1000 === 0) log.flush();
    }
    log.close();
    const text = readFileSync(path, 'utf8');
    expect(text.length).toBeLessThanOrEqual(100_000 + 200);
    expect(text.startsWith('line 0\nline 1\n')).toBe(true);
    expect(text.endsWith('line 99998\nline 99999\n')).toBe(true);
    const note = /\[lightworker: (\d+) characters \((\d+) lines\) of output left out here/.exec(text);
    expect(note).not.toBeNull();
    const lines = text.split('\n').filter((l) => l.startsWith('line '));
    // Every line is either kept or counted, none twice.
    expect(lines.length + Number(note![2])).toBe(100_000);
    expect(log.droppedLines).toBe(Number(note![2]));
  });

  it('a short log is written whole, without a note', () => {
    const t = tempDir();
    cleanup = t.cleanup;
    const path = join(t.dir, 'stdout.jsonl');
    const log = new RawLog(path, 100_000);
    for (let i = 0; i < 10; i++) log.add(`line ${i}`);
    log.close();
    expect(readFileSync(path, 'utf8')).toBe(Array.from({ length: 10 }, (_, i) => `line ${i}\n`).join(''));
    expect(log.droppedChars).toBe(0);
  });
});
