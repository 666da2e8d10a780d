import type { Config } from '../api/types.js';

// The Settings page's routing forms as plain rows: built from get_settings' config, checked here for what a
// person gets wrong most (a missing name, a URL that is not one, a gateway or profile that does not exist),
// and turned back into the sections update_settings takes. The engine checks everything again and names the
// key it refuses; these keys are the same, so either error lands on the same field.

export const EFFORTS = ['low', 'medium', 'high', 'xhigh'] as const;
export const KINDS = ['plan', 'explore', 'review', 'execute'] as const;
export const WORKFLOW_TYPES = ['chore', 'feature', 'hotfix', 'refactor'] as const;
export const AUTH_STYLES = ['', 'bearer', 'x-api-key'] as const;
export const WIRE_APIS = ['', 'responses', 'messages', 'chat'] as const;

export interface GatewayRow { name: string; base_url: string; key_env: string; auth: string; wire_api: string; model_map: string }
export interface ProfileRow { name: string; worker: string; model: string; reasoning_effort: string; kinds: string[]; cost: number | ''; gateway: string }
export interface RouteRow { model: string; primaryGateway: string; primaryModel: string; fallbackGateway: string; fallbackModel: string }
export interface PairRow { worker: string; fast: string; reasoning: string }
export interface RoutingForm {
  gateways: GatewayRow[];
  profiles: ProfileRow[];
  types: Record<(typeof WORKFLOW_TYPES)[number], string>;
  escalation: string[];
  defaultGateway: string;
  routes: RouteRow[];
  perWorker: PairRow[];
}
export interface Problem { key: string; message: string }

type Sections = Pick<Config, 'gateways' | 'profiles'> & { routing: Record<string, unknown>; models: Pick<Config['models'], 'per_worker' | 'routes'> };

/** The key a row's fields are named under: its name, or a placeholder while it has none yet. */
export function rowKey(name: string, i: number): string {
  return name.trim() || `new${i + 1}`;
}

export function formFromConfig(c: Config): RoutingForm {
  return {
    gateways: Object.entries(c.gateways).map(([name, g]) => ({
      name, base_url: g.base_url, key_env: g.key_env, auth: g.auth ?? '', wire_api: g.wire_api ?? '',
      model_map: Object.entries(g.model_map ?? {}).map(([a, b]) => `${a} = ${b}`).join('\n'),
    })),
    profiles: Object.entries(c.profiles).map(([name, p]) => ({
      name, worker: p.worker ?? '', model: p.model ?? '', reasoning_effort: p.reasoning_effort, kinds: [...p.kinds], cost: p.cost ?? '', gateway: p.gateway ?? '',
    })),
    types: Object.fromEntries(WORKFLOW_TYPES.map((t) => [t, c.routing.types[t] ?? ''])) as RoutingForm['types'],
    escalation: [...c.routing.escalation],
    defaultGateway: c.routing.default_gateway ?? '',
    routes: Object.entries(c.models.routes).map(([model, r]) => ({
      model, primaryGateway: r.primary.gateway, primaryModel: r.primary.model ?? '', fallbackGateway: r.fallback?.gateway ?? '', fallbackModel: r.fallback?.model ?? '',
    })),
    perWorker: Object.entries(c.models.per_worker).map(([worker, p]) => ({ worker, fast: p.fast, reasoning: p.reasoning })),
  };
}

/** `ours = theirs` lines as a map; a line without `=` is reported. */
function parseModelMap(text: string, key: string, problems: Problem[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const [a, b, ...rest] = line.split('=').map((s) => s.trim());
    if (!a || !b || rest.length) problems.push({ key, message: `"${line}" is not "our-model = provider-model"` });
    else out[a] = b;
  }
  return out;
}

function isHttpUrl(text: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Every named row once: an empty or repeated name is a problem at that row's name field. */
function checkNames(names: string[], section: string, what: string, problems: Problem[]): void {
  const seen = new Set<string>();
  names.forEach((raw, i) => {
    const name = raw.trim();
    const key = `${section}.${rowKey(raw, i)}.name`;
    if (!name) problems.push({ key, message: `give the ${what} a name` });
    else if (seen.has(name)) problems.push({ key, message: `${what} "${name}" is defined twice` });
    seen.add(name);
  });
}

/**
 * The form's problems, first one first (the page shows and scrolls to it), and the sections to save when
 * there are none. `builtinProfiles` are the names routing may use besides the form's own profiles; `workers`
 * the worker names a profile or pair may use (empty: not checked here).
 */
export function sectionsFromForm(f: RoutingForm, builtinProfiles: string[], workers: string[] = []): { problems: Problem[]; sections: Sections } {
  const problems: Problem[] = [];
  // The workers list_workers names (built-in and linked); unknown when it could not be read.
  const knownWorker = (name: string, key: string) => {
    if (name && workers.length && !workers.includes(name)) problems.push({ key, message: `unknown worker "${name}" (known: ${workers.join(', ')})` });
  };
  const gatewayNames = new Set(f.gateways.map((g) => g.name.trim()).filter(Boolean));
  const profileNames = new Set([...builtinProfiles, ...f.profiles.map((p) => p.name.trim()).filter(Boolean)]);
  const knownGateway = (name: string, key: string) => {
    if (name && !gatewayNames.has(name)) problems.push({ key, message: `unknown gateway "${name}" (defined: ${[...gatewayNames].join(', ') || 'none'})` });
  };

  checkNames(f.gateways.map((g) => g.name), 'gateways', 'gateway', problems);
  const gateways: Sections['gateways'] = {};
  f.gateways.forEach((g, i) => {
    const k = `gateways.${rowKey(g.name, i)}`;
    const base_url = g.base_url.trim();
    const key_env = g.key_env.trim();
    if (!base_url) problems.push({ key: `${k}.base_url`, message: 'the base URL is required' });
    else if (!isHttpUrl(base_url)) problems.push({ key: `${k}.base_url`, message: `"${base_url}" is not an http(s) URL` });
    if (!key_env) problems.push({ key: `${k}.key_env`, message: 'name the environment variable that holds the key' });
    else if (!ENV_NAME.test(key_env)) problems.push({ key: `${k}.key_env`, message: `"${key_env}" is not an environment variable name (the key itself is never stored here)` });
    const model_map = parseModelMap(g.model_map, `${k}.model_map`, problems);
    gateways[g.name.trim()] = {
      base_url, key_env, model_map,
      ...(g.auth ? { auth: g.auth as 'bearer' | 'x-api-key' } : {}),
      ...(g.wire_api ? { wire_api: g.wire_api as 'responses' | 'messages' | 'chat' } : {}),
    };
  });

  checkNames(f.profiles.map((p) => p.name), 'profiles', 'profile', problems);
  const profiles: Sections['profiles'] = {};
  f.profiles.forEach((p, i) => {
    const k = `profiles.${rowKey(p.name, i)}`;
    if (!p.kinds.length) problems.push({ key: `${k}.kinds`, message: 'pick at least one kind of task it may run' });
    if (p.cost !== '' && (!Number.isInteger(Number(p.cost)) || Number(p.cost) < 0 || Number(p.cost) > 1000)) problems.push({ key: `${k}.cost`, message: 'a whole number from 0 to 1000' });
    knownGateway(p.gateway, `${k}.gateway`);
    knownWorker(p.worker.trim(), `${k}.worker`);
    profiles[p.name.trim()] = {
      reasoning_effort: p.reasoning_effort as Config['profiles'][string]['reasoning_effort'],
      kinds: KINDS.filter((kind) => p.kinds.includes(kind)),
      ...(p.worker.trim() ? { worker: p.worker.trim() } : {}),
      ...(p.model ? { model: p.model } : {}),
      ...(p.cost !== '' ? { cost: Number(p.cost) } : {}),
      ...(p.gateway ? { gateway: p.gateway } : {}),
    };
  });

  const types: Record<string, string> = {};
  for (const t of WORKFLOW_TYPES) {
    const v = f.types[t];
    if (!v) continue;
    if (v !== 'cheapest' && !profileNames.has(v)) problems.push({ key: `routing.types.${t}`, message: `unknown profile "${v}"` });
    types[t] = v;
  }
  const escalation = f.escalation.filter(Boolean);
  if (!escalation.length) problems.push({ key: 'routing.escalation', message: 'the escalation chain needs at least one profile' });
  escalation.forEach((p, i) => {
    if (!profileNames.has(p)) problems.push({ key: `routing.escalation.${i}`, message: `unknown profile "${p}"` });
  });
  knownGateway(f.defaultGateway, 'routing.default_gateway');

  const seenModels = new Set<string>();
  const routes: Sections['models']['routes'] = {};
  f.routes.forEach((r, i) => {
    const k = `models.routes.${rowKey(r.model, i)}`;
    const model = r.model.trim();
    if (!model) problems.push({ key: `${k}.model`, message: 'pick the model this route is for' });
    else if (seenModels.has(model)) problems.push({ key: `${k}.model`, message: `model "${model}" has two routes` });
    seenModels.add(model);
    if (!r.primaryGateway) problems.push({ key: `${k}.primary.gateway`, message: 'the primary route needs a gateway' });
    knownGateway(r.primaryGateway, `${k}.primary.gateway`);
    knownGateway(r.fallbackGateway, `${k}.fallback.gateway`);
    if (r.fallbackModel.trim() && !r.fallbackGateway) problems.push({ key: `${k}.fallback.gateway`, message: 'a fallback model needs a fallback gateway' });
    routes[model] = {
      primary: { gateway: r.primaryGateway, ...(r.primaryModel.trim() ? { model: r.primaryModel.trim() } : {}) },
      ...(r.fallbackGateway ? { fallback: { gateway: r.fallbackGateway, ...(r.fallbackModel.trim() ? { model: r.fallbackModel.trim() } : {}) } } : {}),
    };
  });

  const perWorker: Sections['models']['per_worker'] = {};
  f.perWorker.forEach((w, i) => {
    const k = `models.per_worker.${rowKey(w.worker, i)}`;
    const worker = w.worker.trim();
    if (!worker) problems.push({ key: `${k}.worker`, message: 'name the worker this pair is for' });
    else if (perWorker[worker]) problems.push({ key: `${k}.worker`, message: `worker "${worker}" has two pairs` });
    knownWorker(worker, `${k}.worker`);
    if (!w.fast) problems.push({ key: `${k}.fast`, message: 'pick its fast model' });
    if (!w.reasoning) problems.push({ key: `${k}.reasoning`, message: 'pick its reasoning model' });
    perWorker[worker] = { fast: w.fast, reasoning: w.reasoning };
  });

  return {
    problems,
    sections: {
      gateways,
      profiles,
      // An empty default gateway asks the engine to remove the key (its default, none, applies again).
      routing: { types, escalation, default_gateway: f.defaultGateway || null },
      models: { per_worker: perWorker, routes },
    },
  };
}
