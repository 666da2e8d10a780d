import type { Config } from './config.js';
import { AppError } from './errors.js';

/**
 * Profiles bundle model + effort + the kinds they may run, a worker, and a cost rank
 * (lower = cheaper) used by workflow routing ("cheapest adequate") and the `deeper_profile`
 * escalation chain. Config `[profiles.NAME]` wins over a built-in of the same name. Lives in core so
 * task creation and the routing above it read one definition.
 */
export interface ProfileSpec {
  model?: string;
  reasoning_effort: 'low' | 'medium' | 'high' | 'xhigh';
  kinds: ('plan' | 'explore' | 'review' | 'execute')[];
  worker?: string;
  cost?: number;
  /** The gateway its tasks go through (config profiles only). */
  gateway?: string;
}

export const BUILTIN_PROFILE_SPECS: Record<string, ProfileSpec> = {
  planner: { reasoning_effort: 'high', kinds: ['plan'], cost: 30 },
  fast_worker: { reasoning_effort: 'low', kinds: ['explore', 'execute', 'review'], cost: 10 },
  deep_worker: { reasoning_effort: 'high', kinds: ['explore', 'execute', 'review'], cost: 40 },
  reviewer: { reasoning_effort: 'medium', kinds: ['review', 'explore'], cost: 20 },
};

/** Cost rank of a profile without one: after every ranked built-in. */
export const UNRANKED_COST = 100;

/** Every profile name: built-ins and config. */
export function profileNames(config: Config): string[] {
  return [...new Set([...Object.keys(BUILTIN_PROFILE_SPECS), ...Object.keys(config.profiles)])];
}

/** A profile by name, or undefined. */
export function findProfile(config: Config, name: string): ProfileSpec | undefined {
  return config.profiles[name] ?? BUILTIN_PROFILE_SPECS[name];
}

/** A profile by name: config.toml [profiles.NAME] wins over the built-in of that name. */
export function profileFor(config: Config, name: string): ProfileSpec {
  const p = findProfile(config, name);
  if (!p) throw new AppError('invalid_input', `profile: unknown profile "${name}" (known: ${profileNames(config).join(', ')})`, { field: 'profile' });
  return p;
}

/**
 * The cheapest adequate profile for a kind: it runs `kind` and its worker (the profile's, else
 * `defaultWorker`) passes `usable`; lowest cost rank first, then name. Null when none qualifies.
 */
export function cheapestProfile(config: Config, kind: ProfileSpec['kinds'][number], defaultWorker: string, usable: (worker: string) => boolean = () => true): { profile: string; worker: string; cost: number } | null {
  const ranked = profileNames(config)
    .map((name) => ({ name, spec: findProfile(config, name)! }))
    .filter(({ spec }) => spec.kinds.includes(kind) && usable(spec.worker ?? defaultWorker))
    .map(({ name, spec }) => ({ profile: name, worker: spec.worker ?? defaultWorker, cost: spec.cost ?? UNRANKED_COST }))
    .sort((a, b) => a.cost - b.cost || a.profile.localeCompare(b.profile));
  return ranked[0] ?? null;
}
