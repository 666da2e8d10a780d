// One claimer of the `fleet-claims` bench: a runner row of its own on the bench's store, then claims as fast
// as it can for `ms` — list queued candidates, take one at random among the first 16 (claimers do not all
// race for the head of the queue), claimFleetTask in a write transaction. `lock`: first take the one
// fleet-wide transaction lock the claims took before slot rows (every claim of the fleet in turn).
// `holdMs`: the claim's transaction stays open that much longer (pg_sleep at its end), standing in for the
// round trips to a server that is not on this machine (a claim is about 10 of them).
// argv: <home> <lock|slots> <ms> <startAtEpochMs> <holdMs>. Prints {claimed, busy, taken, ms: [claim latencies]} on stdout.
import { randomBytes } from 'node:crypto';
import { Engine } from '../../main/engine.js';
import { prep } from '../../main/store/db.js';
import { claimFleetTask, fleetIdentity, fleetLimitsOf, listFleetCandidates, registerRunner, type FleetCandidate } from '../../main/scheduler/fleet.js';

const [home, mode, msArg, startArg, holdArg] = process.argv.slice(2);
const holdS = Number(holdArg ?? 0) / 1000;
const engine = new Engine({ home });
const me = fleetIdentity(engine.config);
const runnerId = `bench-${process.pid}-${randomBytes(3).toString('hex')}`;
engine.write(() => registerRunner(engine.db, runnerId, me, 1_000_000, 600_000));
const limits = fleetLimitsOf(engine.config);
const out = { claimed: 0, busy: 0, taken: 0, ms: [] as number[] };
const wait = Number(startArg) - Date.now();
if (wait > 0) await new Promise((r) => setTimeout(r, wait));
const end = Date.now() + Number(msArg);
while (Date.now() < end) {
  const cands = listFleetCandidates(engine.db, me, limits, [], [], 16) as FleetCandidate[];
  if (!cands.length) break;
  const pick = cands[Math.floor(Math.random() * cands.length)];
  const t = performance.now();
  const r = engine.write(() => {
    if (mode === 'lock') prep(engine.db, "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.claim')) AS locked").get();
    const claimed = claimFleetTask(engine.db, pick, me, runnerId, limits);
    if (holdS > 0) prep(engine.db, 'SELECT pg_sleep(?) AS slept').get(holdS);
    return claimed;
  });
  if (r === 'claimed') {
    out.claimed++;
    out.ms.push(performance.now() - t);
  } else if (r === 'busy') out.busy++;
  else out.taken++;
}
engine.close();
process.stdout.write(JSON.stringify(out));
