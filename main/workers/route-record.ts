import type { GatewayRoute } from './adapter.js';
import type { TurnAuth } from './credentials.js';
import { providerModel } from './routing.js';

/**
 * Which route a turn really used, as recorded in its `task.route` event and shown by `show`: the
 * gateway (or none), the host the requests go to, how the key is sent, our model and the provider's
 * name for it, and where the credential came from. No secret: the key's variable name only.
 */
export interface RouteRecord {
  worker: string;
  gateway: string | null;
  /** Host (and port) of the base URL; `default` when the CLI uses its vendor's own endpoint. */
  host: string;
  /** `bearer` | `x-api-key` for a gateway; else the auth mode (`login`, `env`, `none`). */
  authStyle: string;
  credential: string;
  model: string | null;
  providerModel: string | null;
}

/** How each built-in CLI sends a gateway key when the gateway does not say. */
const NATIVE_STYLE: Record<string, 'bearer' | 'x-api-key'> = { 'claude-code': 'x-api-key' };

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** Describe the route of a turn of `worker` with this model, gateway and authentication. */
export function describeRoute(worker: string, turn: { model: string | null; gateway: GatewayRoute | null }, auth: TurnAuth): RouteRecord {
  const gw = turn.gateway;
  const inherited = Object.values(auth.baseUrls)[0];
  return {
    worker,
    gateway: gw?.name ?? null,
    host: gw ? hostOf(gw.baseUrl) : inherited ? hostOf(inherited) : 'default',
    authStyle: gw ? (gw.authStyle ?? NATIVE_STYLE[worker] ?? 'bearer') : auth.mode,
    credential: auth.source,
    model: turn.model,
    providerModel: providerModel(turn),
  };
}

/** One line for people: `gateway zai → open.bigmodel.cn (bearer), model claude-sonnet-4-5 → glm-4.6, key gateway zai (ZAI_KEY)`. */
export function formatRoute(r: RouteRecord): string {
  const where = r.gateway ? `gateway ${r.gateway} → ${r.host} (${r.authStyle})` : `${r.host === 'default' ? "the CLI's own endpoint" : r.host} (${r.authStyle})`;
  const model = r.model ? `, model ${r.model}${r.providerModel && r.providerModel !== r.model ? ` → ${r.providerModel}` : ''}` : '';
  return `${where}${model}, credential ${r.credential}`;
}
