import { z } from 'zod';
import type { Config } from './config.js';

// The routing parts of config.toml: profiles, gateways, model routes, and the check that every gateway a
// setting names is one [gateways] defines.

export const EFFORTS = ['low', 'medium', 'high', 'xhigh'] as const;
export const KINDS = ['plan', 'explore', 'review', 'execute'] as const;
export const ENV_NAME = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');
/** How a gateway wants its key: `Authorization: Bearer` or `x-api-key` (unset: the worker's native style). */
export const GATEWAY_AUTH_STYLES = ['bearer', 'x-api-key'] as const;

export const profileSchema = z.strictObject({
  model: z.string().min(1).optional(),
  reasoning_effort: z.enum(EFFORTS).default('medium'),
  kinds: z.array(z.enum(KINDS)).min(1).default([...KINDS]),
  worker: z.string().min(1).optional(),
  /** Cost rank, lower = cheaper: workflow routing picks the cheapest adequate profile. */
  cost: z.number().int().min(0).max(1000).optional(),
  /** The gateway (config.toml [gateways]) this profile's tasks go through, unless a task names its own. */
  gateway: z.string().min(1).optional(),
});

/** One way to reach a model: a gateway of [gateways] and the name that gateway's provider knows it by. */
export const modelRouteSchema = z.strictObject({ gateway: z.string().min(1), model: z.string().min(1).optional() });

export const gatewaySchema = z.strictObject({
  base_url: z.string().url(),
  /** Name of the environment variable that holds the key; the key itself is never stored. */
  key_env: ENV_NAME,
  wire_api: z.enum(['responses', 'messages', 'chat']).optional(),
  auth: z.enum(GATEWAY_AUTH_STYLES).optional(),
  /** Our model name → the provider's (e.g. "claude-sonnet-4-5" = "glm-4.6"). */
  model_map: z.record(z.string().min(1), z.string().min(1)).default({}),
});

/** The first setting that names a gateway [gateways] does not define, with its key path. */
export function unknownGatewayRef(c: Config): { key: string; name: string } | null {
  const refs: [string, string | undefined][] = [
    ['routing.default_gateway', c.routing.default_gateway],
    ...Object.entries(c.profiles).map(([n, p]): [string, string | undefined] => [`profiles.${n}.gateway`, p.gateway]),
    ...Object.entries(c.models.routes).flatMap(([m, r]): [string, string | undefined][] => [[`models.routes.${m}.primary.gateway`, r.primary.gateway], [`models.routes.${m}.fallback.gateway`, r.fallback?.gateway]]),
  ];
  for (const [key, name] of refs) if (name !== undefined && !c.gateways[name]) return { key, name };
  return null;
}
