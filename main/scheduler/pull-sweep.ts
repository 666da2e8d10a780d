import type { PullHost } from '../isolation/pull-host.js';
import { claimDuePoll, pollPull } from '../isolation/pull-watch.js';
import { duePulls } from '../store/pulls.js';

/** How often the leader looks for pull requests whose poll is due, in ms (polls themselves back off). */
const EVERY_MS = 1000;
const lastRun = new WeakMap<PullHost, number>();
const inFlight = new WeakMap<PullHost, Promise<number>>();

/**
 * The leader's watch over open pull requests: each whose next poll is due is claimed (so two leaders of a
 * fleet never poll one at once) and looked at (isolation/pull-watch.ts), one after another, off the beat:
 * the network calls never hold a heartbeat. Returns the sweep under way (the number of pulls looked at),
 * or null when none started (too soon, or one still running). Cheap when nothing is open (a partial index).
 */
export function sweepPullRequests(engine: PullHost, now = Date.now()): Promise<number> | null {
  if (inFlight.has(engine) || now - (lastRun.get(engine) ?? 0) < EVERY_MS) return null;
  lastRun.set(engine, now);
  const due = duePulls(engine.db, now);
  if (!due.length) return null;
  const run = (async () => {
    let looked = 0;
    for (const p of due) {
      if (!engine.db.open) break;
      try {
        if (!claimDuePoll(engine, p)) continue;
        await pollPull(engine, p);
        looked++;
      } catch {
        // The store closed or busy meanwhile: the poll's claim lapses and the next sweep takes it again.
      }
    }
    return looked;
  })().finally(() => inFlight.delete(engine));
  inFlight.set(engine, run);
  return run;
}

/** The sweep under way for `engine`, if any (tests and shutdown wait for it). */
export function pullSweepInFlight(engine: PullHost): Promise<number> | null {
  return inFlight.get(engine) ?? null;
}
