import type { Config } from '../core/config.js';
import { profileFor } from '../core/profiles.js';
import { AppError } from '../core/errors.js';
import { registerSecretValues } from '../core/secret-values.js';
import { routedModel, upstreamModel } from '../tasks/route-rule.js';
import type { ReasoningEffort, Task } from '../tasks/types.js';
import type { GatewayRoute } from './adapter.js';

/**
 * Which model, effort and gateway a task's turn runs with (routing):
 * - a profile (task.profile: config [profiles.NAME], else a built-in) supplies defaults for effort,
 *   model and the kinds it may run;
 * - with no explicit model, effort picks it: `low` → models.fast, anything else → models.reasoning
 *   (per worker when [models.per_worker.WORKER] names its own pair, e.g. Claude models for claude-code);
 * - only models in models.allow may run;
 * - a gateway is a base URL plus the NAME of the env var holding its key; the key is read from this
 *   process's environment at turn time and never stored.
 */
export { BUILTIN_PROFILE_SPECS, profileFor, type ProfileSpec } from '../core/profiles.js';

export interface Route {
  /** null: let the worker choose (the mock worker, or no model configured). */
  model: string | null;
  reasoningEffort: ReasoningEffort;
  gateway: GatewayRoute | null;
}

type RoutedTask = Pick<Task, 'kind' | 'worker' | 'model' | 'reasoningEffort' | 'profile' | 'gateway'>;

/** A configured gateway as a worker needs it, with the key read from `env` (never stored). */
export function gatewayRoute(config: Config, name: string, env: NodeJS.ProcessEnv = process.env): GatewayRoute {
  const g = config.gateways[name];
  if (!g) {
    const known = Object.keys(config.gateways).join(', ') || 'none configured';
    throw new AppError('invalid_input', `gateway: unknown gateway "${name}" (config.toml [gateways]: ${known})`, { field: 'gateway' });
  }
  const key = env[g.key_env] ?? null;
  // Whatever env the key came from, the redactor must know it before the worker can print it.
  registerSecretValues([key]);
  return { name, baseUrl: g.base_url, keyEnv: g.key_env, key, wireApi: g.wire_api, authStyle: g.auth, modelMap: g.model_map };
}

/** The model name the worker sends: ours, mapped through the gateway's model_map (ours when unmapped). */
export function providerModel(turn: { model: string | null; gateway: GatewayRoute | null }): string | null {
  if (!turn.model) return null;
  return turn.gateway?.modelMap?.[turn.model] ?? turn.model;
}

/** Resolve model, effort and gateway for a task's turn. Throws `invalid_input` / `forbidden` naming the field. */
export function resolveRoute(config: Config, task: RoutedTask, env: NodeJS.ProcessEnv = process.env): Route {
  const profile = task.profile ? profileFor(config, task.profile) : null;
  if (profile && !profile.kinds.includes(task.kind)) {
    throw new AppError('invalid_input', `profile: profile "${task.profile}" does not run ${task.kind} tasks (kinds: ${profile.kinds.join(', ')})`, { field: 'profile' });
  }
  const { model, effort: reasoningEffort } = routedModel(config, task, profile);
  if (model && !config.models.allow.includes(model)) {
    throw new AppError('forbidden', `model: "${model}" is not in models.allow (${config.models.allow.join(', ')})`, { field: 'model' });
  }
  const gateway = task.gateway ? gatewayRoute(config, task.gateway, env) : null;
  // The model's route through this gateway may name the provider's model (the seed's primary/fallback routes).
  const upstream = gateway && model ? upstreamModel(config, model, gateway.name) : null;
  if (gateway && model && upstream !== model) gateway.modelMap = { ...gateway.modelMap, [model]: upstream! };
  return { model, reasoningEffort, gateway };
}
