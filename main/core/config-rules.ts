import type { Config } from './config.js';
import { profileNames } from './profiles.js';

/** A rule of config.toml that spans keys (the schema checks each key alone). */
export interface ConfigProblem {
  /** Dotted key path, e.g. `models.fast` or `profiles.deep.model`. */
  key: string;
  message: string;
}

/**
 * Every model the configuration would route to must be allow-listed: models.fast / reasoning, each
 * [models.per_worker.W] pair and each profile's model. (A task naming a model outside the list is refused
 * at submit; a configured one would only fail when a task runs, so settings and doctor catch it here.)
 * `raw` is the file as parsed: the built-in per-worker pair (Claude models for claude-code) is checked
 * only when the file writes [models.per_worker] itself, so narrowing models.allow to one vendor is not
 * refused over a default the user never chose (a claude-code task would then be refused when routed).
 * `workers`: the worker names this home knows (built in, linked, [workers.NAME]); given, each profile's
 * worker must be one of them.
 */
export function configProblems(config: Config, raw?: unknown, workers?: readonly string[]): ConfigProblem[] {
  const rawModels = (raw as { models?: { per_worker?: unknown } } | undefined)?.models;
  const perWorkerWritten = raw === undefined || rawModels?.per_worker !== undefined;
  const allow = new Set(config.models.allow);
  const problems: ConfigProblem[] = [];
  const check = (key: string, model: string | undefined) => {
    if (model !== undefined && !allow.has(model)) problems.push({ key, message: `"${model}" is not in models.allow (${config.models.allow.join(', ') || 'empty'})` });
  };
  check('models.fast', config.models.fast);
  check('models.reasoning', config.models.reasoning);
  for (const [worker, pair] of Object.entries(perWorkerWritten ? (config.models.per_worker ?? {}) : {})) {
    check(`models.per_worker.${worker}.fast`, pair.fast);
    check(`models.per_worker.${worker}.reasoning`, pair.reasoning);
  }
  for (const [name, p] of Object.entries(config.profiles)) check(`profiles.${name}.model`, p.model);
  // Routing names profiles: one that is neither built in nor in [profiles] would fail only when a task is
  // routed or retried deeper, so it is caught here.
  const profiles = new Set(profileNames(config));
  const known = `known: ${[...profiles].join(', ')}`;
  for (const [type, name] of Object.entries(config.routing.types)) {
    if (name !== undefined && name !== 'cheapest' && !profiles.has(name)) problems.push({ key: `routing.types.${type}`, message: `unknown profile "${name}" (${known}, or "cheapest")` });
  }
  config.routing.escalation.forEach((name, i) => {
    if (!profiles.has(name)) problems.push({ key: `routing.escalation.${i}`, message: `unknown profile "${name}" (${known})` });
  });
  // A profile's worker that does not exist would fail only when a task routed to the profile is claimed.
  if (workers) {
    const names = new Set(workers);
    for (const [name, p] of Object.entries(config.profiles)) {
      if (p.worker !== undefined && !names.has(p.worker)) problems.push({ key: `profiles.${name}.worker`, message: `unknown worker "${p.worker}" (known: ${[...names].join(', ')})` });
    }
  }
  return problems;
}
