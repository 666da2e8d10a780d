import { z } from 'zod';
import { PLAN_RESULT_SCHEMA, planResultSchema } from './plan-schema.js';
import type { TaskKind } from '../types.js';
import { withEscalation, withoutNullEscalation } from './escalation.js';

/**
 * The final answer each kind must return. Strict-mode compatible (OpenAI structured outputs): every
 * property required, nullable where optional, no extra properties.
 */
export const exploreResultSchema = z.strictObject({
  summary: z.string(),
  findings: z.array(z.string()),
});

export const reviewResultSchema = z.strictObject({
  summary: z.string(),
  verdict: z.enum(['approve', 'request_changes', 'comment']),
  issues: z.array(z.strictObject({ file: z.string().nullable(), severity: z.enum(['low', 'medium', 'high']), message: z.string() })),
});

export const executeResultSchema = z.strictObject({
  summary: z.string(),
  files_changed: z.array(z.string()),
  notes: z.string().nullable(),
});

export const RESULT_SCHEMAS: Record<TaskKind, z.ZodType> = {
  // One plan contract: the orchestration module's (no nested planners, id rules, 1–12 tasks).
  plan: planResultSchema,
  explore: exploreResultSchema,
  review: reviewResultSchema,
  execute: executeResultSchema,
};

const jsonSchemaCache = new Map<TaskKind, Record<string, unknown>>();

/** JSON Schema of a kind's result, for CLIs that take one (`codex --output-schema`). */
export function resultJsonSchema(kind: TaskKind): Record<string, unknown> {
  let s = jsonSchemaCache.get(kind);
  if (!s) {
    if (kind === 'plan') s = PLAN_RESULT_SCHEMA as unknown as Record<string, unknown>;
    else {
      s = z.toJSONSchema(RESULT_SCHEMAS[kind], { target: 'draft-7' }) as Record<string, unknown>;
      delete s.$schema;
    }
    // Every kind may stop and ask a person instead of finishing (escalation.ts).
    s = withEscalation(s);
    jsonSchemaCache.set(kind, s);
  }
  return s;
}

export interface ParsedResult {
  /** What is stored as the task's result: the validated JSON, or `{text}` for free text. */
  result: unknown;
  schemaValid: boolean;
  /** Why it is not valid, when it is not. */
  problem: string | null;
}

/** Parse a worker's final text as the kind's result. Never throws. */
export function parseResult(kind: TaskKind, finalText: string | null): ParsedResult {
  if (finalText === null || !finalText.trim()) return { result: null, schemaValid: false, problem: 'the worker returned no final answer' };
  let json: unknown;
  const text = finalText.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text);
  try {
    json = JSON.parse(fenced ? fenced[1] : text);
  } catch {
    return { result: { text: finalText.slice(0, 64 * 1024) }, schemaValid: false, problem: 'the final answer is not JSON' };
  }
  json = withoutNullEscalation(json);
  const parsed = RESULT_SCHEMAS[kind].safeParse(json);
  if (parsed.success) return { result: parsed.data, schemaValid: true, problem: null };
  const issue = parsed.error.issues[0];
  return { result: json, schemaValid: false, problem: `${issue.path.join('.') || 'result'}: ${issue.message}` };
}
