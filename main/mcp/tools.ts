import { z } from 'zod';
import type { CommandDef } from '../commands/table.js';

/** The MCP tool set, in the order tools/list shows it. Tool name = command name. */
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
  'review_task',
  'open_pull_request',
  'answer_task',
  'list_workers',
  'get_cache_metrics',
  'run_doctor',
  'prune_workspaces',
] as const;

/**
 * Tools only a person may use over MCP (they answer `forbidden` unless approvals.allow_mcp = true): not
 * listed unless the person allowed them, so a host's model does not pay ~900 bytes of tools/list on every
 * listing for calls it is refused. They stay callable, so a model that calls one anyway is told why.
 */
export const PERSON_TOOLS = ['approve_task', 'accept_task', 'open_pull_request'] as const;

/** The tools a listing shows: all but the person's, unless the person allowed MCP to use them. */
export function visibleTools(tools: ToolSpec[], allowMcp: boolean): ToolSpec[] {
  return allowMcp ? tools : tools.filter((t) => !(PERSON_TOOLS as readonly string[]).includes(t.name));
}

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
  /** destructiveHint only on tools that write: MCP defines it as meaningless when readOnlyHint is true. */
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean };
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
        annotations: hintsFor(cmd.readOnly, Boolean(cmd.destructive)),
        command: cmd,
      });
    } else if (PLACEHOLDER_TOOLS[name]) {
      const p = PLACEHOLDER_TOOLS[name];
      tools.push({
        name,
        description: p.description,
        inputSchema: { type: 'object', properties: {} },
        annotations: hintsFor(p.readOnly, false),
        command: null,
      });
    }
  }
  referToShared(tools);
  for (const t of tools) {
    const props = t.inputSchema.properties as Record<string, unknown> | undefined;
    for (const [field, on] of Object.entries(LISTED_ON_ONE)) if (props && t.name !== on) delete props[field];
  }
  hintOnce(tools);
  return tools;
}

/** Where the field hints are given; other tools with the same fields say so in their description. */
const HINTED_TOOL = 'delegate_task';

/**
 * A field hint is given once per listing, on delegate_task (where most calls go): a tool sharing its
 * fields (orchestrate_goal: workspace, mode, priority) drops the repeated hints and choices (enums; the
 * type stays) and says "fields as in delegate_task" once instead — the same words, a third of the bytes.
 */
function hintOnce(tools: ToolSpec[]): void {
  const hinted = tools.find((t) => t.name === HINTED_TOOL);
  const hintedProps = (hinted?.inputSchema.properties as Record<string, Record<string, unknown>> | undefined) ?? {};
  for (const t of tools) {
    if (t === hinted) continue;
    let dropped = false;
    for (const [k, v] of Object.entries((t.inputSchema.properties as Record<string, Record<string, unknown>> | undefined) ?? {})) {
      const same = hintedProps[k];
      if (!same) continue;
      if (FIELD_HINTS[k] && v.description === FIELD_HINTS[k]) {
        delete v.description;
        dropped = true;
      }
      // The same choices as delegate_task's field: listed there once; the type stays here.
      if (Array.isArray(v.enum) && JSON.stringify(v.enum) === JSON.stringify(same.enum)) {
        delete v.enum;
        dropped = true;
      }
    }
    if (dropped) t.description = `${t.description.replace(/\.$/, '')}; fields as in ${HINTED_TOOL}.`;
  }
}

/**
 * A nested schema equal to another listed tool's whole input (delegate_batch's items are
 * delegate_task inputs) is listed by name instead of a second time in full: same meaning, half the
 * bytes. The full schema still validates the call.
 */
function referToShared(tools: ToolSpec[]): void {
  const whole = new Map(tools.map((t) => [JSON.stringify(withoutCallFields(t.inputSchema)), t.name]));
  const referred = new Set<string>();
  const visit = (node: unknown, self: string): void => {
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      const same = v && typeof v === 'object' && !Array.isArray(v) ? whole.get(JSON.stringify(v)) : undefined;
      if (same && same !== self) {
        const extra = REFERRED_ONLY[same];
        (node as Record<string, unknown>)[k] = { type: 'object', description: `${same} input${extra ? ` + ${extra.field}: ${extra.hint}` : ''}` };
        referred.add(same);
      } else visit(v, self);
    }
  };
  for (const t of tools) for (const v of Object.values(t.inputSchema.properties ?? {})) visit(v, t.name);
  // A field that means something only where the input is referred to is listed there alone.
  for (const t of tools) {
    const only = REFERRED_ONLY[t.name];
    if (only && referred.has(t.name)) delete (t.inputSchema.properties as Record<string, unknown> | undefined)?.[only.field];
  }
}

/**
 * Fields of a call as a whole, never of a task inside it: delegate_batch's items are delegate_task inputs
 * but one client_request_id covers the batch.
 */
const CALL_FIELDS = ['client_request_id'];

function withoutCallFields(schema: ToolSpec['inputSchema']): unknown {
  const props = schema.properties as Record<string, unknown> | undefined;
  if (!props || !CALL_FIELDS.some((f) => f in props)) return schema;
  return { ...schema, properties: Object.fromEntries(Object.entries(props).filter(([k]) => !CALL_FIELDS.includes(k))) };
}

/** Fields of a tool's input that only matter where another tool refers to it (a batch-local `ref`). */
const REFERRED_ONLY: Record<string, { field: string; hint: string }> = {
  delegate_task: { field: 'ref', hint: 'its name for depends_on' },
};

/**
 * JSON Schema of what a caller sends (zod "input" side: defaults make fields optional). Every client
 * we checked drops a tool (or all tools) whose schema is not `"type":"object"`, so that is enforced.
 */
export function toInputSchema(schema: z.ZodType): ToolSpec['inputSchema'] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  stripNoise(json);
  dropUnlisted(json);
  addHints(json);
  if (json.type !== 'object') throw new Error(`MCP input schema must be an object, got ${String(json.type)}`);
  return json as ToolSpec['inputSchema'];
}

/**
 * One-line hints for fields whose meaning a model cannot guess from the name, added where the zod
 * schema has no description of its own. Kept few: every byte here is paid on every tools/list.
 */
const FIELD_HINTS: Record<string, string> = {
  workspace: 'absolute path',
  objective: 'self-contained instructions',
  kind: 'default explore; only execute writes',
  mode: 'auto_readonly (default): execute waits for a person; plan_only: all wait',
  ref: 'batch-local name for depends_on',
  depends_on: 'ids/batch refs to finish first',
  worker: 'codex, claude-code, opencode, mock, linked',
  verify: 'commands that must exit 0',
  priority: '0-100, high first',
};

/**
 * Fields whose long list of choices is named by a hint instead (the type stays; the server still checks
 * the value against every choice): list_tasks' 15 statuses cost 200 bytes on every listing, and every
 * answer names a task's status anyway.
 */
const CHOICES_HINTED: Record<string, string> = {
  status: 'e.g. queued, running, failed',
};

function addHints(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach(addHints);
  const o = node as Record<string, unknown>;
  const props = o.properties as Record<string, Record<string, unknown>> | undefined;
  if (props && typeof props === 'object') {
    for (const [k, v] of Object.entries(props)) if (FIELD_HINTS[k] && v && typeof v === 'object' && !v.description) v.description = FIELD_HINTS[k];
    for (const [k, hint] of Object.entries(CHOICES_HINTED)) {
      const items = props[k]?.items as Record<string, unknown> | undefined;
      if (items && Array.isArray(items.enum)) {
        delete items.enum;
        props[k].description ??= hint;
      }
    }
  }
  for (const v of Object.values(o)) addHints(v);
}

/**
 * Keywords left out of tools/list. The server validates every call against the full zod schema,
 * applies the defaults and names the offending field (unknown keys included), so bounds, patterns,
 * defaults and additionalProperties would only cost tokens on every listing; Codex drops
 * min/max/default before its model sees them anyway. A default that changes what a task does is
 * said in its hint (kind, mode).
 */
const LISTING_NOISE = new Set(['minLength', 'maxLength', 'minItems', 'maxItems', 'pattern', 'propertyNames', 'additionalProperties', 'minimum', 'maximum', 'exclusiveMinimum', 'default']);

function stripNoise(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach(stripNoise);
  const o = node as Record<string, unknown>;
  // Every field keeps its `type`, string enums and plain text included: a client that meets a field
  // without one (Codex) drops its description with it, and the model then sees `workspace: {}`.
  for (const k of LISTING_NOISE) delete o[k];
  for (const [k, v] of Object.entries(o)) {
    // The keys of `properties` are field names, not keywords: a field may be called "default".
    if (k === 'properties' && v && typeof v === 'object') Object.values(v).forEach(stripNoise);
    else stripNoise(v);
  }
}

/**
 * Fields accepted over MCP but not listed: get_events' `before` (paging backwards, for the console) would
 * cost 70 bytes, where `cursor` and `newest` page an agent's way; delegate_task's `parent_id` (joining an
 * existing tree, which LightWorker's own planners and teams do) 30 bytes, where depends_on is an agent's way.
 */
const UNLISTED_FIELDS = ['before', 'parent_id'];

/**
 * Objects listed as one line instead of their fields (the server still checks each field, naming a wrong
 * one): `budget`'s ten fields would cost ~500 bytes; the names an agent needs fit in one description.
 */
const ONE_LINE_OBJECTS: Record<string, string> = {
  budget: 'max_tokens|max_cost_usd|max_turns|max_wall_s; root_max_*: tree sum',
};

/**
 * Fields listed on one tool only, accepted on the others named here: client_request_id and budget are
 * listed (with their hints) on delegate_task, and the `initialize` instructions say they apply to
 * delegate_batch and orchestrate_goal as well — 40 and 130 bytes a tool on every listing otherwise.
 */
const LISTED_ON_ONE: Record<string, string> = { client_request_id: 'delegate_task', budget: 'delegate_task' };

function dropUnlisted(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) return node.forEach(dropUnlisted);
  const o = node as Record<string, unknown>;
  if (o.properties && typeof o.properties === 'object') {
    const props = o.properties as Record<string, unknown>;
    for (const k of UNLISTED_FIELDS) delete props[k];
    for (const [k, description] of Object.entries(ONE_LINE_OBJECTS)) if (props[k]) props[k] = { type: 'object', description };
  }
  for (const v of Object.values(o)) dropUnlisted(v);
}

/** MCP annotations: readOnlyHint always (Codex refuses tools without it in "writes" mode), destructiveHint on writers. */
function hintsFor(readOnly: boolean, destructive: boolean): ToolSpec['annotations'] {
  return readOnly ? { readOnlyHint: true } : { readOnlyHint: false, destructiveHint: destructive };
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
      '. workspace is an absolute path (a non-git folder is worked on in a copy).',
    'Set client_request_id (a fresh UUID per call) on delegate_task' +
      (has.has('delegate_batch') ? ', delegate_batch' : '') +
      (has.has('orchestrate_goal') ? ' and orchestrate_goal' : '') +
      ", and send the same one when you retry a call whose answer you did not get: the retry returns the first call's tasks (replayed: true) instead of creating them twice." +
      ' budget (listed on delegate_task, taken by delegate_batch and orchestrate_goal too) limits what each task (max_*) and the whole tree (root_max_*) may spend; you may only lower what the person configured, never raise it.',
    'Follow with get_task' + (has.has('wait_tasks') ? ', wait_tasks (blocks up to 55 s until tasks settle or need approval)' : '') + ', list_tasks (summaries, cursor paging)' +
      (has.has('get_events') ? ', get_events (cursor paging)' : '') + (has.has('get_task_diff') ? ', get_task_diff' : '') + '; get_task has the full record.',
    has.has('approve_task')
      ? 'Execute tasks wait for a person to approve them (the answer says so, and where); approve_task and accept_task are for the person, not for you.'
      : 'Execute tasks wait for a person to approve them (the answer says so, and where); approving, accepting and opening pull requests are for the person.',
  ];
  return lines.join('\n');
}
