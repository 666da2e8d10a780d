import { z } from 'zod';
import type { CommandDef } from '../commands/table.js';

/** The MCP tool set (SPEC §8), in the order tools/list shows it. Tool name = command name. */
export const MCP_TOOLS = [
  'orchestrate_goal',
  'delegate_task',
  'delegate_batch',
  'get_task',
  'get_task_tree',
  'get_task_diff',
  'list_tasks',
  'wait_tasks',
  'get_events',
  'approve_task',
  'cancel_task',
  'retry_task',
  'accept_task',
  'list_workers',
  'get_cache_metrics',
  'run_doctor',
  'prune_workspaces',
] as const;

/** `LIGHTWORKER_MCP_TOOLS=core`: just enough to hand off work and follow it. */
export const CORE_TOOLS = ['delegate_task', 'get_task', 'wait_tasks', 'list_tasks', 'cancel_task'] as const;

/** Tools listed even before their command exists; calling them answers `unavailable`. */
export const PLACEHOLDER_TOOLS: Record<string, { description: string; readOnly: boolean }> = {
  get_cache_metrics: { description: 'Prompt-cache hit rates and token usage by worker, model and profile.', readOnly: true },
};

export type ToolSet = 'full' | 'core';

export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: { type: 'object'; [k: string]: unknown };
  annotations: { title?: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint?: boolean; openWorldHint: boolean };
  /** null for a placeholder whose command does not exist yet. */
  command: CommandDef | null;
}

export function toolSetFromEnv(value = process.env.LIGHTWORKER_MCP_TOOLS): ToolSet {
  return value?.trim().toLowerCase() === 'core' ? 'core' : 'full';
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The tools this process exposes: every MCP tool whose command exists in `commands` now (plus
 * placeholders), each with its zod schema as JSON Schema. Built once at start-up.
 */
export function buildTools(commands: ReadonlyMap<string, CommandDef>, set: ToolSet = 'full'): ToolSpec[] {
  const names: readonly string[] = set === 'core' ? CORE_TOOLS : MCP_TOOLS;
  const tools: ToolSpec[] = [];
  for (const name of names) {
    if (!TOOL_NAME.test(name)) throw new Error(`MCP tool name "${name}" is not [A-Za-z0-9_-]`);
    const cmd = commands.get(name);
    if (cmd) {
      tools.push({
        name,
        description: cmd.description,
        inputSchema: toInputSchema(cmd.input),
        annotations: { readOnlyHint: cmd.readOnly, destructiveHint: Boolean(cmd.destructive), openWorldHint: false },
        command: cmd,
      });
    } else if (PLACEHOLDER_TOOLS[name]) {
      const p = PLACEHOLDER_TOOLS[name];
      tools.push({
        name,
        description: p.description,
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        annotations: { readOnlyHint: p.readOnly, destructiveHint: false, openWorldHint: false },
        command: null,
      });
    }
  }
  return tools;
}

/**
 * JSON Schema of what a caller sends (zod "input" side: defaults make fields optional). Every client
 * we checked drops a tool (or all tools) whose schema is not `"type":"object"`, so that is enforced.
 */
export function toInputSchema(schema: z.ZodType): ToolSpec['inputSchema'] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  stripNoise(json);
  addHints(json);
  if (json.type !== 'object') throw new Error(`MCP input schema must be an object, got ${String(json.type)}`);
  return json as ToolSpec['inputSchema'];
}

/**
 * One-line hints for fields whose meaning a model cannot guess from the name, added where the zod
 * schema has no description of its own. Kept few: every byte here is paid on every tools/list.
 */
const FIELD_HINTS: Record<string, string> = {
  workspace: 'absolute path inside a git repository',
  objective: 'self-contained instructions for the worker',
  kind: 'plan/explore/review are read-only; execute changes files in its own worktree',
  mode: 'auto_readonly (default): execute waits for a person; plan_only: all wait; auto_execute: none wait',
  ref: 'batch-local id that depends_on of other tasks in the batch may name',
  depends_on: 'task ids (or batch refs) that must complete first',
  worker: 'codex, claude-code, opencode, mock or a linked worker',
  verify: 'commands run in the worktree after the worker; all must exit 0',
  type: 'workflow type: pre-fills priority and timeout',
};

function addHints(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach(addHints);
  const o = node as Record<string, unknown>;
  const props = o.properties as Record<string, Record<string, unknown>> | undefined;
  if (props && typeof props === 'object') {
    for (const [k, v] of Object.entries(props)) if (FIELD_HINTS[k] && v && typeof v === 'object' && !v.description) v.description = FIELD_HINTS[k];
  }
  for (const v of Object.values(o)) addHints(v);
}

/** Drop bounds that only restate JavaScript's safe-integer range: they cost tokens and say nothing. */
function stripNoise(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach(stripNoise);
  const o = node as Record<string, unknown>;
  if (o.maximum === Number.MAX_SAFE_INTEGER) delete o.maximum;
  if (o.minimum === Number.MIN_SAFE_INTEGER) delete o.minimum;
  for (const v of Object.values(o)) stripNoise(v);
}

/** What tools/list returns for these tools. */
export function listedTools(tools: ToolSpec[]): { name: string; description: string; inputSchema: ToolSpec['inputSchema']; annotations: ToolSpec['annotations'] }[] {
  return tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations }));
}

/** The `initialize` instructions: what Codex shows the model before it searches our tools. */
export function serverInstructions(tools: ToolSpec[]): string {
  const has = new Set(tools.map((t) => t.name));
  const lines = [
    'LightWorker: a local queue that runs bounded coding tasks on agent CLIs (codex, claude-code, opencode, mock) in isolated git worktrees, verifies them itself and keeps a record.',
    'Hand off work with delegate_task (one task; kind plan/explore/review are read-only, execute writes in its own worktree)' +
      (has.has('delegate_batch') ? ', delegate_batch (several, with depends_on by ref)' : '') +
      (has.has('orchestrate_goal') ? ' or orchestrate_goal (a planner splits a goal into a task DAG)' : '') +
      '. workspace is an absolute path inside a git repository.',
    'Follow with get_task' + (has.has('wait_tasks') ? ', wait_tasks (blocks up to 55 s until tasks settle or need approval)' : '') + ', list_tasks' +
      (has.has('get_events') ? ', get_events (cursor paging)' : '') + (has.has('get_task_diff') ? ', get_task_diff' : '') + '.',
    'Execute tasks wait for a person to approve unless mode is auto_execute; approve_task/accept_task over MCP are refused unless the user allowed it.',
  ];
  return lines.join('\n');
}
