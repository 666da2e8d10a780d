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

/**
 * The gateway a task goes through, decided when it is created (so `show` says it before it runs, and the
 * Cache Lab's cohort is the one it runs in): the task's own, its profile's, its model's primary route, then
 * `[routing] default_gateway`; null: the worker's own endpoint.
 */
export function routedGateway(config: Config, t: { gateway?: string | null }, profile: { gateway?: string } | null | undefined, model: string | null): string | null {
  return t.gateway ?? profile?.gateway ?? (model ? config.models.routes[model]?.primary.gateway : undefined) ?? config.routing.default_gateway ?? null;
}

/** The name `gateway`'s provider knows `model` by: the model's route through that gateway, else its model_map. */
export function upstreamModel(config: Config, model: string, gateway: string): string {
  const r = config.models.routes[model];
  const route = r?.primary.gateway === gateway ? r.primary : r?.fallback?.gateway === gateway ? r.fallback : undefined;
  return route?.model ?? config.gateways[gateway]?.model_map[model] ?? model;
}
