import { afterEach, describe, expect, it, vi } from 'vitest';

// runner/heap-trim.ts: a leader started with --expose-gc collects old-generation garbage at a task's end once
// 2 MiB of it piled up; without the flag it leaves V8 alone.
describe('trimHeap', () => {
  afterEach(() => {
    delete (globalThis as { gc?: unknown }).gc;
    vi.resetModules();
  });

  it('collects only once garbage worth the slack piled up since the last collection', async () => {
    const gc = vi.fn();
    (globalThis as { gc?: unknown }).gc = gc;
    const { trimHeap } = await import('../../main/runner/heap-trim.js');
    trimHeap(); // nothing known yet: the first end collects and remembers what is live
    expect(gc).toHaveBeenCalledTimes(1);
    trimHeap();
    expect(gc).toHaveBeenCalledTimes(1);
    const held = Array.from({ length: 40 }, () => new Array(16 * 1024).fill(1.5)); // ~5 MiB more on the heap
    trimHeap();
    expect(gc).toHaveBeenCalledTimes(2);
    expect(held.length).toBe(40);
  });

  it('does nothing where gc() is not exposed', async () => {
    const { trimHeap } = await import('../../main/runner/heap-trim.js');
    expect(() => trimHeap()).not.toThrow();
  });
});
