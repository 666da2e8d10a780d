import type { Db } from '../store/db.js';
import { insertSample, samplesBetween, unsampledUsage, type SampleRow } from '../store/cachelab.js';

/**
 * Usage samples: one row per `worker.usage` event, materialized from the event log. UNIQUE
 * event_seq (the primary key) makes it idempotent — run it any number of times, from any process.
 *
 * Route verification compares the model the CLI reports with the routed one. Codex (`exec --json`)
 * and OpenCode (`run --format json`) never report the model they ran, so their samples are
 * `not_exposed`: counted, and the metrics say the route was taken from configuration.
 */
export type RouteCheck = 'verified' | 'not_exposed' | 'mismatch' | 'missing' | 'legacy';

/** Workers whose event stream never names the upstream model (their adapters echo the routed one). */
export const MODEL_NOT_EXPOSED: ReadonlySet<string> = new Set(['codex', 'opencode']);

/** A stored sample with its route check typed. */
export interface UsageSample extends Omit<SampleRow, 'route'> {
  route: RouteCheck;
}

/** Same model, ignoring a provider prefix (`provider/model`) and a dated suffix (`model-20250929`). */
export function sameModel(routed: string, reported: string): boolean {
  const strip = (m: string) => m.toLowerCase().replace(/^.*\//, '');
  const a = strip(routed);
  const b = strip(reported);
  return a === b || (b.startsWith(`${a}-`) && /^-(?:\d{6,8}|latest)$/.test(b.slice(a.length)));
}

/** How a sample's route checks out. `prompted` is false for usage recorded before the Cache Lab. */
export function checkRoute(worker: string, prompted: boolean, routed: string | null, reported: string | null): RouteCheck {
  if (!prompted) return 'legacy';
  if (MODEL_NOT_EXPOSED.has(worker)) return 'not_exposed';
  if (!reported) return 'missing';
  if (!routed) return 'verified'; // the worker chose its own model and named it
  return sameModel(routed, reported) ? 'verified' : 'mismatch';
}

/**
 * Turn every `worker.usage` event not yet sampled into a sample. Must run in a write transaction.
 * The cohort and routed model come from the attempt's `worker.prompt` event (what actually ran);
 * the reported model from the usage event, else the latest `worker.started`. Returns rows added.
 */
export function materializeSamples(db: Db, limit = 5000): number {
  const rows = unsampledUsage(db, limit);
  let added = 0;
  for (const r of rows) {
    const usage = JSON.parse(r.payload) as Record<string, unknown>;
    const prompt = r.prompt ? (JSON.parse(r.prompt) as Record<string, unknown>) : null;
    const started = r.started ? (JSON.parse(r.started) as Record<string, unknown>) : null;
    const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Math.max(0, Math.round(v)) : 0);
    // A prompt event from before the Cache Lab has no protocol field: that usage is legacy.
    const prompted = Boolean(prompt && typeof prompt.protocol === 'string');
    const routed = str(prompt?.model);
    const reported = str(usage.model) ?? str(started?.model);
    const cohort = (prompted ? str(prompt?.cohort) : null) ?? r.task_cohort;
    const attempt = num((prompt as { attempt?: unknown } | null)?.attempt) || r.attempt;
    added += insertSample(db, {
      eventSeq: r.seq, taskId: r.task_id, attempt, worker: r.worker, cohort, ts: r.ts, inputTokens: num(usage.inputTokens), cachedTokens: num(usage.cachedTokens),
      outputTokens: num(usage.outputTokens), routedModel: routed, reportedModel: reported, route: checkRoute(r.worker, prompted, routed, reported),
    });
  }
  return added;
}

/** Samples with ts in [since, until], oldest first. */
export function listSamples(db: Db, since: number, until: number): UsageSample[] {
  return samplesBetween(db, since, until) as UsageSample[];
}
