import type { Config } from '../core/config.js';
import { findProfile, profileNames } from '../core/profiles.js';
import { routedGateway, routedModel, upstreamModel } from './route-rule.js';
import { decideTaskRoute, type RouteFields } from './task-route.js';
import type { Task } from './types.js';

/** Which wire protocol each built-in worker speaks to a gateway (absent: any). */
const WORKER_WIRE: Record<string, string> = { codex: 'responses', 'claude-code': 'messages', opencode: 'chat' };

/** One hop of a planned route: the gateway, the provider's name for the model there, the protocol it answers in. */
export interface RouteHop {
  gateway: string;
  upstream: string | null;
  /** The gateway's wire_api (its response_mode); null: the worker's own. */
  wire: string | null;
}

/** Where the tasks of a profile, of a routed model, or of neither go before any of them runs. */
export interface PlannedRoute {
  /** `profile quick`, `model gpt-5.5`, or `any other task`. */
  subject: string;
  worker: string | null;
  model: string | null;
  /** null: the worker's own endpoint. */
  via: RouteHop | null;
  /** The model's other route, taken by `retry --strategy fallback_gateway` and when `via`'s gateway is rate-limited. */
  fallback: RouteHop | null;
  /** The worker cannot speak the gateway's protocol (a codex task through a Messages-only gateway). */
  problem: string | null;
}

function hopOf(config: Config, gateway: string | null, model: string | null): RouteHop | null {
  if (!gateway) return null;
  return { gateway, upstream: model ? upstreamModel(config, model, gateway) : null, wire: config.gateways[gateway]?.wire_api ?? null };
}

function mismatch(worker: string | null, hop: RouteHop | null): string | null {
  const speaks = worker ? WORKER_WIRE[worker] : undefined;
  return hop?.wire && speaks && hop.wire !== speaks ? `${worker} speaks ${speaks}, gateway ${hop.gateway} answers ${hop.wire}` : null;
}

function planned(config: Config, subject: string, worker: string | null, model: string | null, gateway: string | null): PlannedRoute {
  const via = hopOf(config, gateway, model);
  const r = model ? config.models.routes[model] : undefined;
  const other = r?.fallback ? (gateway === r.fallback.gateway ? r.primary.gateway : gateway === r.primary.gateway ? r.fallback.gateway : null) : null;
  const fallback = hopOf(config, other, model);
  return { subject, worker, model, via, fallback, problem: mismatch(worker, via) ?? mismatch(worker, fallback) };
}

/**
 * The route each kind of task will take, as task creation decides it (routedGateway): every profile that
 * names a model or a gateway, every model with [models.routes], and the rest (`[routing] default_gateway`,
 * else the worker's own endpoint, with the default worker).
 */
export function plannedRoutes(config: Config): PlannedRoute[] {
  const out: PlannedRoute[] = [];
  for (const name of profileNames(config)) {
    const p = findProfile(config, name)!;
    if (!p.gateway && !p.model && !config.profiles[name]) continue;
    const worker = p.worker ?? config.scheduler.default_worker;
    const { model } = routedModel(config, { worker, model: null, reasoningEffort: null }, p);
    out.push(planned(config, `profile ${name}`, p.worker ?? null, model, routedGateway(config, {}, p, model)));
  }
  for (const model of Object.keys(config.models.routes)) out.push(planned(config, `model ${model}`, null, model, routedGateway(config, {}, null, model)));
  out.push(planned(config, 'any other task', null, null, config.routing.default_gateway ?? null));
  return out;
}

/** A planned route for one task as it would be created with these fields (nothing is created). */
export interface TaskPlannedRoute extends PlannedRoute {
  worker: string;
  profile: string | null;
  /** Why a workflow type chose the profile (routing.types), or null. */
  routedBy: string | null;
}

/** The route a task with these fields will take, decided as creation decides it (and refused as creation refuses). */
export function plannedTaskRoute(config: Config, t: RouteFields, known: readonly string[] | undefined): TaskPlannedRoute {
  const r = decideTaskRoute(config, t, known);
  const route = planned(config, 'this task', r.worker, r.routedModel, r.gateway);
  return { ...route, worker: r.worker, profile: r.profile, routedBy: r.why };
}

/** The gateway a task runs through now, the provider's model name there and its protocol; null: the worker's own endpoint. */
export function taskHop(config: Config, t: Pick<Task, 'worker' | 'model' | 'reasoningEffort' | 'profile' | 'gateway'>): RouteHop | null {
  if (!t.gateway) return null;
  const { model } = routedModel(config, t, t.profile ? config.profiles[t.profile] : undefined);
  return hopOf(config, t.gateway, model);
}

/** What to do about a route whose worker cannot speak its gateway's protocol (doctor's fix), or null. */
export function routeFix(r: PlannedRoute): string | null {
  if (!r.problem) return null;
  const hop = mismatch(r.worker, r.via) ? r.via : r.fallback;
  return `give gateway ${hop?.gateway} the wire_api its worker speaks, or route this to another gateway`;
}

function hopText(h: RouteHop): string {
  return `gateway ${h.gateway}${h.upstream ? ` as ${h.upstream}` : ''} (${h.wire ?? "the worker's protocol"})`;
}

/** `profile quick: codex, gpt-5.5-mini → gateway a as gpt-5.5-mini (responses); fallback …`. */
export function formatPlannedRoute(r: PlannedRoute): string {
  const who = [r.worker, r.model].filter(Boolean).join(', ');
  const via = r.via ? hopText(r.via) : "the worker's own endpoint";
  return `${r.subject}: ${who ? `${who} → ` : ''}${via}${r.fallback ? `; fallback ${hopText(r.fallback)}` : ''}${r.problem ? ` — ${r.problem}` : ''}`;
}
