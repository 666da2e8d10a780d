import type { RequestKind } from '../../store/requests.js';

/** What a worker asks, before it is stored. */
export interface AskInput {
  kind: RequestKind;
  question: string;
  tool?: string | null;
  command?: string | null;
  scope?: string | null;
  reason?: string | null;
  options?: string[];
  sessionId?: string | null;
}

/** What a worker itself may ask: a question or a permission (a budget request is LightWorker's own). */
export type WorkerAsk = AskInput & { kind: 'permission' | 'question' };

/**
 * The escalation protocol for workers without a permission tool of their own (Codex,
 * OpenCode, linked CLIs; Claude Code uses it for questions): the final answer carries `escalation`
 * (a question or a permission request) instead of finishing. The kind's result contract gets the
 * field (strict-mode compatible: required, null when not used); a bare `{"question": …}` or
 * `{"permission_request": …}` object is understood too.
 */
export const ESCALATION_JSON_SCHEMA = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'text', 'options', 'command', 'scope', 'reason'],
      properties: {
        type: { type: 'string', enum: ['question', 'permission_request'] },
        text: { type: 'string' },
        options: { type: 'array', items: { type: 'string' } },
        command: { type: ['string', 'null'] },
        scope: { type: ['string', 'null'] },
        reason: { type: ['string', 'null'] },
      },
    },
  ],
} as const;

/** The kind's result schema plus the required, nullable `escalation` field. */
export function withEscalation(schema: Record<string, unknown>): Record<string, unknown> {
  const props = (schema.properties ?? {}) as Record<string, unknown>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return { ...schema, properties: { ...props, escalation: ESCALATION_JSON_SCHEMA }, required: [...required, 'escalation'] };
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v : null);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The request a final answer escalates, or null when it is an ordinary result. Never throws. */
export function parseEscalation(finalText: string | null): WorkerAsk | null {
  if (!finalText) return null;
  const text = finalText.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text);
  let json: unknown;
  try {
    json = JSON.parse(fenced ? fenced[1] : text);
  } catch {
    return null;
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) return null;
  const o = json as Record<string, unknown>;
  const e = o.escalation;
  if (e && typeof e === 'object') {
    const x = e as Record<string, unknown>;
    return x.type === 'permission_request' ? permission(x) : question(x);
  }
  if (o.permission_request && typeof o.permission_request === 'object') return permission(o.permission_request as Record<string, unknown>);
  if (typeof o.question === 'string') return { kind: 'question', question: o.question };
  if (o.question && typeof o.question === 'object') return question(o.question as Record<string, unknown>);
  return null;
}

function question(x: Record<string, unknown>): WorkerAsk {
  return { kind: 'question', question: str(x.text) ?? str(x.question) ?? '(the worker asked without text)', options: strings(x.options), reason: str(x.reason) };
}

function permission(x: Record<string, unknown>): WorkerAsk {
  const command = str(x.command);
  const scope = str(x.scope);
  const text = str(x.text) ?? `permission to run ${command ?? 'a command'}${scope ? ` (${scope})` : ''}`;
  return { kind: 'permission', question: text, tool: str(x.tool) ?? 'command', command, scope, reason: str(x.reason) };
}

/** An ordinary result with `escalation: null` is validated without the field. */
export function withoutNullEscalation(json: unknown): unknown {
  if (json && typeof json === 'object' && !Array.isArray(json) && 'escalation' in json && (json as { escalation: unknown }).escalation === null) {
    const { escalation: _e, ...rest } = json as Record<string, unknown>;
    return rest;
  }
  return json;
}
