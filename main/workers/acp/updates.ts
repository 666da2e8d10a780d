import type { NormalizedEvent } from '../adapter.js';

/**
 * session/update notifications → LightWorker's normalized worker.* events. Message chunks are joined
 * into one worker.message per run of chunks (an agent streams a token at a time); tool calls become
 * worker.tool started/completed/failed, carrying their input and text output; plans become worker.plan;
 * usage is read where the agent reports it (PromptResponse.usage, usage_update cost).
 */
export class UpdateMapper {
  #text: string[] = [];
  /** Everything the agent said this turn: the last message is the turn's answer. */
  lastMessage: string | null = null;
  readonly #tools = new Map<string, { name: string; input: unknown }>();
  costUsd: number | null = null;
  /** Usage summed over the model steps an agent reports one by one (Qwen Code: `_meta.usage` on a message chunk). */
  stepUsage: Record<string, number> | null = null;

  constructor(readonly emit: (e: NormalizedEvent) => void) {}

  /** Flush the message being streamed (before any other event, and at the end). */
  flush(): void {
    if (!this.#text.length) return;
    const text = this.#text.join('');
    this.#text = [];
    if (!text.trim()) return;
    this.lastMessage = text;
    this.emit({ type: 'worker.message', text });
  }

  /** Forget what was said before the turn's prompt (a loaded session's replay, an agent's note on a mode change). */
  reset(): void {
    this.#text = [];
    this.lastMessage = null;
  }

  update(u: Record<string, unknown>): void {
    const kind = String(u.sessionUpdate);
    const stepUsage = ((u._meta ?? {}) as { usage?: unknown }).usage;
    if (stepUsage && typeof stepUsage === 'object') {
      this.stepUsage ??= {};
      for (const [k, v] of Object.entries(stepUsage)) if (typeof v === 'number') this.stepUsage[k] = (this.stepUsage[k] ?? 0) + v;
    }
    if (kind === 'agent_message_chunk') {
      const c = (u.content ?? {}) as Record<string, unknown>;
      if (c.type === 'text' && typeof c.text === 'string') this.#text.push(c.text);
      return;
    }
    if (kind === 'agent_thought_chunk' || kind === 'user_message_chunk' || kind === 'available_commands_update') return;
    this.flush();
    if (kind === 'tool_call' || kind === 'tool_call_update') this.#tool(u, kind === 'tool_call');
    else if (kind === 'plan') {
      const entries = Array.isArray(u.entries) ? (u.entries as Record<string, unknown>[]) : [];
      this.emit({ type: 'worker.plan', entries: entries.map((e) => ({ content: String(e.content ?? ''), status: String(e.status ?? 'pending'), priority: String(e.priority ?? 'medium') })) });
    } else if (kind === 'usage_update') {
      const cost = (u.cost ?? null) as { amount?: number; currency?: string } | null;
      if (cost && typeof cost.amount === 'number' && (cost.currency ?? 'USD') === 'USD') this.costUsd = cost.amount;
    } else if (kind === 'notice') {
      this.emit({ type: 'worker.warning', message: String(u.message ?? u.text ?? 'notice') });
    }
  }

  #tool(u: Record<string, unknown>, first: boolean): void {
    const id = String(u.toolCallId);
    const known = this.#tools.get(id);
    const name = String(u.title ?? known?.name ?? u.kind ?? 'tool');
    const input = u.rawInput ?? known?.input;
    this.#tools.set(id, { name: known?.name ?? name, input });
    const status = u.status === 'completed' ? 'completed' : u.status === 'failed' ? 'failed' : 'started';
    if (status === 'started' && !first) return;
    const output = outputText(u);
    this.emit({ type: 'worker.tool', name: known?.name ?? name, status, ...(input === undefined ? {} : { input }), ...(output ? { output: output.slice(0, 4000) } : {}) });
  }
}

/** The text a tool call's content (or raw output) carries. */
function outputText(u: Record<string, unknown>): string | undefined {
  const parts: string[] = [];
  for (const c of (Array.isArray(u.content) ? u.content : []) as Record<string, unknown>[]) {
    if (c.type === 'content') {
      const b = (c.content ?? {}) as Record<string, unknown>;
      if (typeof b.text === 'string') parts.push(b.text);
    } else if (c.type === 'diff') parts.push(`diff ${String(c.path)}`);
    else if (c.type === 'terminal') parts.push(`terminal ${String(c.terminalId)}`);
  }
  if (!parts.length && u.rawOutput !== undefined) parts.push(typeof u.rawOutput === 'string' ? u.rawOutput : JSON.stringify(u.rawOutput));
  return parts.length ? parts.join('\n') : undefined;
}

/** Token usage an agent reports on its PromptResponse (`usage`, or in `_meta`), in LightWorker's terms. */
export function usageOfResponse(r: Record<string, unknown>, model: string | null, costUsd: number | null, stepUsage: Record<string, number> | null = null): NormalizedEvent | null {
  const meta = (r._meta ?? {}) as Record<string, unknown>;
  // Gemini CLI: `_meta.quota.token_count` {input_tokens, output_tokens} and `model_usage` [{model, …}].
  const quota = (meta.quota ?? {}) as { token_count?: Record<string, number>; model_usage?: { model?: string }[] };
  const u = (r.usage ?? meta.usage ?? quota.token_count ?? stepUsage ?? null) as Record<string, number> | null;
  if (quota.model_usage?.[0]?.model) model = quota.model_usage[0].model;
  if (!u || typeof u !== 'object') return null;
  const cached = num(u.cachedReadTokens ?? u.cached_read_tokens ?? u.cachedTokens ?? u.cache_read_input_tokens);
  const written = num(u.cachedWriteTokens ?? u.cache_creation_input_tokens);
  const input = num(u.inputTokens ?? u.input_tokens ?? u.promptTokens);
  const output = num(u.outputTokens ?? u.output_tokens) + num(u.thoughtTokens ?? u.reasoning_tokens);
  if (!input && !output && !cached) return null;
  // ACP's inputTokens counts the whole prompt; cache reads and writes are reported beside it.
  return { type: 'worker.usage', inputTokens: Math.max(input, cached + written), cachedTokens: cached, outputTokens: output, model, costUsd };
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
