import { z } from 'zod';
import { AppError } from '../core/errors.js';
import type { Engine } from '../engine.js';
import { resolveTaskRefs } from './task-ids.js';

/** Which face a call came through. Approvals and accepts from 'mcp' need approvals.allow_mcp. */
export type Face = 'cli' | 'mcp' | 'http' | 'ipc' | 'library';

/** Who a face is, in event records ("approved by the CLI"). */
export const FACE_LABELS: Record<Face, string> = { cli: 'the CLI', mcp: 'an MCP client', http: 'the console', ipc: 'the console', library: 'a program (library)' };

export interface CommandContext {
  engine: Engine;
  face: Face;
  /** Delegation depth of the caller: LIGHTWORKER_DEPTH of the process that called, 0 for a person. */
  depth: number;
  /** Aborted when the caller goes away (MCP cancellation, HTTP client disconnect). */
  signal?: AbortSignal;
}

export interface CommandDef<S extends z.ZodType = z.ZodType, O = unknown, N extends string = string> {
  /** Literal in each definition: the library derives its typed method names from it. */
  name: N;
  /** One short sentence: shown in `--help`, MCP tools/list and the console. */
  description: string;
  input: S;
  /** Reads only; MCP readOnlyHint. */
  readOnly: boolean;
  /** Destroys or discards work (cancel, prune); MCP destructiveHint. */
  destructive?: boolean;
  handler(ctx: CommandContext, input: z.output<S>): O | Promise<O>;
}

/** Identity helper that keeps the schema's types flowing into the handler. */
export function defineCommand<const N extends string, S extends z.ZodType, O>(def: CommandDef<S, O, N>): CommandDef<S, O, N> {
  return def;
}

/** Turn a zod failure into an `invalid_input` AppError that names the field. */
export function inputError(err: z.ZodError, command?: string): AppError {
  const issue = err.issues[0];
  let field = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');
  if (issue.code === 'unrecognized_keys') field = [field, ...issue.keys].filter(Boolean).join('.');
  const prefix = command ? `${command}: ` : '';
  // `command` lets a face that speaks in its own terms (the CLI's flags) drop the internal name again.
  return new AppError('invalid_input', `${prefix}${field || 'input'}: ${issue.message}`, { field: field || 'input', issues: err.issues.length, ...(command ? { command } : {}) });
}

/** Validate `raw` against the command's schema and run it. The one entry every face uses. */
export async function runCommand(table: ReadonlyMap<string, CommandDef>, ctx: CommandContext, name: string, raw: unknown): Promise<unknown> {
  const cmd = table.get(name);
  if (!cmd) throw new AppError('not_found', `unknown command "${name}"`, { field: 'command' });
  const parsed = cmd.input.safeParse(resolveTaskRefs(ctx.engine.db, raw ?? {}));
  if (!parsed.success) throw inputError(parsed.error, name);
  return await cmd.handler(ctx, parsed.data);
}

/** Only a person approves or accepts, unless the user allowed MCP clients to. */
export function requirePersonOrAllowed(ctx: CommandContext, what: string): void {
  if (ctx.face === 'mcp' && !ctx.engine.config.approvals.allow_mcp) {
    throw new AppError('forbidden', `${what} over MCP is disabled; a person approves in the desktop app or CLI (set approvals.allow_mcp = true to allow)`);
  }
}
