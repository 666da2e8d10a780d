import { z } from 'zod';
import { AppError, isAppError } from '../core/errors.js';
import type { Engine } from '../engine.js';
import { recoverInterruptedAccepts } from '../isolation/accept-recover.js';
import { busyError, changesSoFar } from '../store/db.js';
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

/**
 * How long a command that found the store busy (other processes holding its write lock) is tried again,
 * in ms, before its caller gets the `busy` error. Each try waits in SQLite's busy handler first (the
 * connection's busy timeout); between tries the event loop is free (answering other calls, a leader's beats).
 */
export const BUSY_RETRY_MS = 30_000;

/**
 * Validate `raw` against the command's schema and run it. The one entry every face uses. A command that
 * found the store busy and wrote nothing (this connection's change count did not move) runs again after a
 * short random pause, for up to BUSY_RETRY_MS; then, or when it had written something, the caller gets a
 * `busy` AppError (retryable), never SQLite's bare "database is locked".
 */
export async function runCommand(table: ReadonlyMap<string, CommandDef>, ctx: CommandContext, name: string, raw: unknown): Promise<unknown> {
  const cmd = table.get(name);
  if (!cmd) throw new AppError('not_found', `unknown command "${name}"`, { field: 'command' });
  // An accept interrupted by a crash is finished or undone by the next command, before it looks at anything
  // (one directory read when there is none; it never throws: a failed recovery is tried by a later command).
  await recoverInterruptedAccepts(ctx.engine);
  const deadline = Date.now() + BUSY_RETRY_MS;
  for (let attempt = 0; ; attempt++) {
    // A process that is shutting down (an MCP server whose client went away), or that found its store
    // damaged, has closed it: a call still waiting here, between busy retries or before its first try, is
    // told which, never a TypeError.
    if (!ctx.engine.db.open) throw ctx.engine.storeFault ?? new AppError('unavailable', `${name}: this LightWorker process is shutting down; call again (the home is served by the next process)`);
    const before = changesSoFar(ctx.engine.db);
    try {
      const parsed = cmd.input.safeParse(resolveTaskRefs(ctx.engine.db, raw ?? {}));
      if (!parsed.success) throw inputError(parsed.error, name);
      return await cmd.handler(ctx, parsed.data);
    } catch (err) {
      const e = busyError(ctx.engine.db, err);
      if (!isAppError(e) || e.code !== 'busy') throw e;
      const pause = Math.random() * Math.min(1000, 50 * 2 ** attempt);
      if (before === null || changesSoFar(ctx.engine.db) !== before || Date.now() + pause > deadline || ctx.signal?.aborted) throw e;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/**
 * Who the caller is, for anything that can start a write: an MCP client or a process a worker started
 * (LIGHTWORKER_DEPTH ≥ 1) is an agent, unless the person set approvals.allow_mcp = true.
 */
export function authorityOf(ctx: CommandContext): 'person' | 'agent' {
  if (ctx.engine.config.approvals.allow_mcp) return 'person';
  return ctx.face === 'mcp' || ctx.depth > 0 ? 'agent' : 'person';
}

/** Where a person approves, for answers and refusals an agent reads. */
export const HOW_A_PERSON_APPROVES = 'a person approves it: `lightworker approve ID`, the console or the tray (approvals.allow_mcp = true lets MCP clients and workers approve)';

/** Only a person approves or accepts, unless the user allowed MCP clients (and workers) to. */
export function requirePersonOrAllowed(ctx: CommandContext, what: string): void {
  if (authorityOf(ctx) === 'agent') {
    const who = ctx.face === 'mcp' ? 'over MCP' : `from a worker process (LIGHTWORKER_DEPTH=${ctx.depth})`;
    throw new AppError('forbidden', `${what} ${who} is disabled; a person approves in the desktop app, the console or the CLI (set approvals.allow_mcp = true to allow)`);
  }
}
