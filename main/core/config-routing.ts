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

export const WIRE_APIS = ['responses', 'messages', 'chat'] as const;

/**
 * The seed's `response_mode` (how the gateway answers) → the wire protocol it stands for: the OpenAI Responses
 * API, Chat Completions, or Anthropic Messages.
 */
export const RESPONSE_MODES: Readonly<Record<string, (typeof WIRE_APIS)[number]>> = {
  responses: 'responses',
  chat: 'chat',
  chat_completions: 'chat',
  messages: 'messages',
  anthropic: 'messages',
};

export const gatewaySchema = z
  .strictObject({
    base_url: z.string().url(),
    /** Name of the environment variable that holds the key; the key itself is never stored. */
    key_env: ENV_NAME,
    /** The wire protocol the gateway speaks; unset: the worker's own. */
    wire_api: z.enum(WIRE_APIS).optional(),
    /** The seed's name for wire_api (RESPONSE_MODES); read as wire_api, and refused when the two disagree. */
    response_mode: z.string().optional(),
    auth: z.enum(GATEWAY_AUTH_STYLES).optional(),
    /** Our model name → the provider's (e.g. "claude-sonnet-4-5" = "glm-4.6"). */
    model_map: z.record(z.string().min(1), z.string().min(1)).default({}),
  })
  .superRefine((g, ctx) => {
    if (g.response_mode === undefined) return;
    const wire = Object.hasOwn(RESPONSE_MODES, g.response_mode) ? RESPONSE_MODES[g.response_mode] : undefined;
    if (!wire) {
      ctx.addIssue({ code: 'custom', path: ['response_mode'], message: `unknown response_mode "${g.response_mode}" (accepted: ${Object.keys(RESPONSE_MODES).join(', ')})` });
    } else if (g.wire_api !== undefined && g.wire_api !== wire) {
      ctx.addIssue({ code: 'custom', path: ['response_mode'], message: `response_mode "${g.response_mode}" means wire_api "${wire}", but wire_api is "${g.wire_api}": keep one of response_mode and wire_api` });
    }
  })
  .transform(({ response_mode, ...g }) => (response_mode === undefined || g.wire_api ? g : { ...g, wire_api: RESPONSE_MODES[response_mode] }));

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
