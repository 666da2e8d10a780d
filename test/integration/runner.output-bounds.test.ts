import { describe, expect, it } from 'vitest';
import { runFloods, type FloodFigures } from '../chaos/floods.js';

/**
 * Workers that print without bounds, run by a real `run --until-idle` with the default `[output]` caps
 * (2000 output events per attempt, an 8 MiB raw log): 100k ordinary lines, a 200 MB `yes`-style flood of
 * 100-character lines and a `yes` flood of 2-byte lines, each ending with its JSON result line. What is
 * stored stays bounded (event rows, database size, raw log), the leader's memory stays bounded, one
 * `worker.output_truncated` event says what was dropped, and the task still ends as it should.
 */
describe('worker output is bounded', () => {
  let figures: FloodFigures;
  const byName = (name: string) => figures.cases.find((c) => c.name === name)!;

  it('runs the floods (each task completes, its result parsed from the final line, its verify run)', async () => {
    figures = await runFloods({ lines: 100_000, floodMb: 200, yesMb: 20, log: () => undefined });
    for (const c of figures.cases) {
      expect({ name: c.name, status: c.status, schemaValid: c.schemaValid, verifyRan: c.verifyRan, rawLogTail: c.rawLogTail }).toEqual({ name: c.name, status: 'completed', schemaValid: true, verifyRan: true, rawLogTail: true });
    }
    expect(figures.improperEnds, figures.notes.join('; ')).toBe(0);
  }, 600_000);

  it('100k lines become a few hundred merged events, every line still in them', () => {
    const c = byName('flood-lines');
    expect(c.rows).toBeLessThan(2000);
    expect(c.storedLines).toBe(100_000);
    expect(c.truncatedEvents).toBe(0);
  });

  it('a flood stores at most the cap of output events and says once how much it dropped', () => {
    for (const name of ['flood-long', 'flood-yes']) {
      const c = byName(name);
      expect(c.outputRows, name).toBeLessThanOrEqual(figures.maxEvents);
      expect(c.rows, name).toBeLessThan(figures.maxEvents + 100);
      expect(c.truncatedEvents, name).toBe(1);
      expect(c.droppedEvents, name).toBeGreaterThan(0);
    }
  });

  it('the raw log keeps its head and tail within its cap; the database stays small', () => {
    const long = byName('flood-long');
    expect(long.rawLogBytes).toBeLessThanOrEqual(figures.rawLogBytes + 4096);
    expect(long.rawLogBytes).toBeGreaterThan(figures.rawLogBytes / 2);
    expect(long.rawLogNote).toBe(true);
    // 200 MB of output (and 20 MB more) in three tasks: the database holds megabytes, not hundreds of them.
    expect(figures.cases.at(-1)!.dbBytes).toBeLessThan(64 * 1024 * 1024);
  });

  it("the leader's peak RSS stays bounded while a worker floods", () => {
    for (const c of figures.cases) expect(c.peakRssMb, c.name).toBeLessThan(400);
  });
});
