import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { BUILTIN_PROFILE_SPECS, cheapestProfile, findProfile, type ProfileSpec } from '../core/profiles.js';
import type { ParsedTaskInput } from './schema.js';
import type { ReasoningEffort } from './types.js';
import { routedGateway, routedModel } from './route-rule.js';

/** What of a task's input decides where it runs. */
export type RouteFields = Pick<ParsedTaskInput, 'kind' | 'worker' | 'model' | 'profile' | 'gateway' | 'reasoning_effort' | 'type'>;

/** Where a new task goes, as creation records it: its profile, worker, model, effort and gateway. */
export interface TaskRoute {
  profile: string | null;
  /** The configured profile ([profiles.NAME]), which creation routes by; null for a built-in or none. */
  profileSpec: ProfileSpec | undefined;
  worker: string;
  /** The model the task records (its own or its profile's); null: effort routing picks one per turn. */
  model: string | null;
  effort: ReasoningEffort | null;
  /** The model its turns go to (effort routing applied), which picks the gateway's route. */
  routedModel: string | null;
  gateway: string | null;
  /** Why a workflow type chose the profile (routing.types), or null. */
  why: string | null;
}

const BUILTIN_PROFILES = Object.keys(BUILTIN_PROFILE_SPECS);

/**
 * The profile and worker a workflow type chooses ([routing.types]: a profile, or "cheapest" = the
 * cheapest adequate profile by cost rank), only when the caller named no profile, worker or model:
 * explicit values win. Null when the type routes nothing.
 */
function typeRoute(config: Config, t: RouteFields, known: readonly string[] | undefined, field: string): { profile: string; worker: string | undefined; why: string } | null {
  const rule = t.type ? config.routing.types[t.type] : undefined;
  if (!rule || t.profile || t.worker || t.model) return null;
  if (rule !== 'cheapest') {
    const spec = findProfile(config, rule);
    if (!spec) throw new AppError('invalid_input', `${field}: routing.types.${t.type} names unknown profile "${rule}"`, { field });
    return { profile: rule, worker: spec.worker, why: `type ${t.type}: profile ${rule} (routing.types)` };
  }
  const pick = cheapestProfile(config, t.kind, config.scheduler.default_worker, (w) => !known || known.includes(w));
  if (!pick) throw new AppError('invalid_input', `${field}: no profile can run a ${t.kind} task for type ${t.type} (routing.types.${t.type} = "cheapest")`, { field });
  return { profile: pick.profile, worker: pick.worker, why: `type ${t.type}: cheapest adequate profile ${pick.profile} (cost ${pick.cost}) on ${pick.worker}` };
}

/**
 * Decide a new task's route, refusing what creation refuses (an unknown profile, worker or gateway, a
 * profile that does not allow the kind, a model outside models.allow). `field` names a field as the
 * caller's input spells it (`tasks[2].model` in a batch).
 */
export function decideTaskRoute(config: Config, t: RouteFields, known: readonly string[] | undefined, field: (name: string) => string = (n) => n): TaskRoute {
  const routed = typeRoute(config, t, known, field('type'));
  const profileName = t.profile ?? routed?.profile;
  const profile = profileName ? config.profiles[profileName] : undefined;
  if (t.profile && !profile && !BUILTIN_PROFILES.includes(t.profile)) {
    throw new AppError('invalid_input', `${field('profile')}: unknown profile "${t.profile}"`, { field: field('profile') });
  }
  if (profile && !profile.kinds.includes(t.kind)) {
    throw new AppError('invalid_input', `${field('profile')}: profile "${t.profile}" does not allow kind ${t.kind}`, { field: field('profile') });
  }
  if (t.gateway && !config.gateways[t.gateway]) throw new AppError('invalid_input', `${field('gateway')}: unknown gateway "${t.gateway}"`, { field: field('gateway') });
  const effort = t.reasoning_effort ?? profile?.reasoning_effort ?? null;
  const model = t.model ?? profile?.model ?? null;
  if (model && !config.models.allow.includes(model)) {
    throw new AppError('invalid_input', `${field('model')}: "${model}" is not in models.allow`, { field: field('model') });
  }
  const worker = t.worker ?? routed?.worker ?? profile?.worker ?? config.scheduler.default_worker;
  if (known && !known.includes(worker)) {
    throw new AppError('invalid_input', `${field('worker')}: unknown worker "${worker}" (known: ${known.join(', ')})`, { field: field('worker') });
  }
  const turnModel = routedModel(config, { worker, model, reasoningEffort: effort }, profile).model;
  return { profile: profileName ?? null, profileSpec: profile, worker, model, effort, routedModel: turnModel, gateway: routedGateway(config, t, profile, turnModel), why: routed?.why ?? null };
}
