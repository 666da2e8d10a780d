import type { Config } from '../core/config.js';
import type { ProfileSpec } from '../core/profiles.js';
import type { ReasoningEffort, Task, TaskKind } from './types.js';

/** The sandbox a kind runs in: only execute writes (in its own worktree). */
export function sandboxFor(kind: TaskKind): 'read-only' | 'workspace-write' {
  return kind === 'execute' ? 'workspace-write' : 'read-only';
}

/** The model effort routing picks for `worker` with no explicit model. */
export function modelForEffort(config: Config, worker: string, effort: ReasoningEffort): string {
  const pair = config.models.per_worker?.[worker] ?? config.models;
  return effort === 'low' ? pair.fast : pair.reasoning;
}

/**
 * The effort and model a task's turns go to: its explicit values, then its profile's, then effort routing
 * (none for the mock worker, which chooses its own). The runner (workers/routing.ts resolveRoute) and the
 * Cache Lab's cohort key (cachelab/cohort.ts) both route by this.
 */
export function routedModel(config: Config, t: Pick<Task, 'worker' | 'model' | 'reasoningEffort'>, profile: ProfileSpec | null | undefined): { model: string | null; effort: ReasoningEffort } {
  const effort = t.reasoningEffort ?? profile?.reasoning_effort ?? 'medium';
  const model = t.model ?? profile?.model ?? (t.worker === 'mock' ? null : modelForEffort(config, t.worker, effort));
  return { model, effort };
}
