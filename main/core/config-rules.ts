import type { Config } from './config.js';

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
 */
export function configProblems(config: Config): ConfigProblem[] {
  const allow = new Set(config.models.allow);
  const problems: ConfigProblem[] = [];
  const check = (key: string, model: string | undefined) => {
    if (model !== undefined && !allow.has(model)) problems.push({ key, message: `"${model}" is not in models.allow (${config.models.allow.join(', ') || 'empty'})` });
  };
  check('models.fast', config.models.fast);
  check('models.reasoning', config.models.reasoning);
  for (const [worker, pair] of Object.entries(config.models.per_worker ?? {})) {
    check(`models.per_worker.${worker}.fast`, pair.fast);
    check(`models.per_worker.${worker}.reasoning`, pair.reasoning);
  }
  for (const [name, p] of Object.entries(config.profiles)) check(`profiles.${name}.model`, p.model);
  return problems;
}
