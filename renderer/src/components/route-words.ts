// Routes as a person reads them: the engine decides each route (get_settings' routes, plan_route, get_task's
// via); this only puts its fields into words.
import type { PlannedRoute, RouteHop } from '../../../main/tasks/route-table.js';

export type { PlannedRoute, RouteHop };

const WIRE_WORDS: Record<string, string> = { responses: 'Responses API', messages: 'Messages API', chat: 'Chat Completions API' };

/** `Messages API`; null: the gateway answers in whatever the worker speaks. */
export function wireWords(wire: string | null): string {
  return wire ? (WIRE_WORDS[wire] ?? wire) : "the worker's own protocol";
}

/** `gateway b as provider-b/sonnet, Messages API`. */
export function hopWords(h: RouteHop): string {
  return `gateway ${h.gateway}${h.upstream ? ` as ${h.upstream}` : ''}, ${wireWords(h.wire)}`;
}

/** `deep (profile)`, `claude-sonnet-4-5 (routed model)`, `any other task`. */
export function subjectWords(subject: string): string {
  const m = /^(profile|model) (.+)$/.exec(subject);
  if (!m) return subject;
  return m[1] === 'profile' ? `${m[2]} (profile)` : `${m[2]} (routed model)`;
}

/** `claude-code, sonnet`, or who picks when the route does not say. */
export function whoWords(r: Pick<PlannedRoute, 'worker' | 'model'>): string {
  return [r.worker ?? 'the default worker', r.model ?? "the worker's model"].join(', ');
}

/** `via gateway b as provider-b/sonnet, Messages API`, or the worker's own login. */
export function viaWords(r: Pick<PlannedRoute, 'via'>): string {
  return r.via ? `via ${hopWords(r.via)}` : "no gateway: the worker's own login";
}

/** `if b is rate limited: gateway a as provider-a/sonnet, Responses API`, or null without a fallback. */
export function fallbackWords(r: Pick<PlannedRoute, 'via' | 'fallback'>): string | null {
  return r.fallback ? `if ${r.via?.gateway ?? 'its gateway'} is rate limited: ${hopWords(r.fallback)}` : null;
}

/** The whole route in one sentence: `deep (profile) → claude-code, sonnet via gateway b as …; if b is rate limited: …`. */
export function routeSentence(r: PlannedRoute): string {
  const fb = fallbackWords(r);
  return `${subjectWords(r.subject)} → ${whoWords(r)} ${viaWords(r)}${fb ? `; ${fb}` : ''}`;
}

/** The New form's line: `will run via gateway b as provider-b/sonnet (Messages API)`, its fallback after. */
export function previewWords(r: PlannedRoute): string {
  const fb = r.fallback ? `; if ${r.via?.gateway} is rate limited: gateway ${r.fallback.gateway}${r.fallback.upstream ? ` as ${r.fallback.upstream}` : ''} (${wireWords(r.fallback.wire)})` : '';
  if (!r.via) return `${whoWords(r)}: no gateway: the worker's own login`;
  return `${whoWords(r)} will run via gateway ${r.via.gateway}${r.via.upstream ? ` as ${r.via.upstream}` : ''} (${wireWords(r.via.wire)})${fb}`;
}
