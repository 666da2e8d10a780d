import { callerDepth } from '../core/caller-depth.js';
import { z } from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { COMMANDS } from '../commands/index.js';
import { runCommand, type CommandContext, type CommandDef } from '../commands/table.js';
import { AppError, isAppError } from '../core/errors.js';
import { redactText } from '../core/redact.js';
import type { Engine } from '../engine.js';
import { MutationLimiter } from './rate-limit.js';
import { buildTools, listedTools, serverInstructions, toolSetFromEnv, visibleTools, type ToolSet } from './tools.js';

const LooseCallToolRequest = z.object({ method: z.literal('tools/call'), params: z.unknown().optional() });

export const SERVER_NAME = 'lightworker';
export const SERVER_VERSION = '0.1.0';

/** Text blocks longer than this are cut; the full result is always in structuredContent. */
const MAX_TEXT_CHARS = 64 * 1024;

export interface McpServerOptions {
  /** Delegation depth of the client: this process's LIGHTWORKER_DEPTH (default read from env). */
  depth?: number;
  /** `core` exposes only delegate/get/wait/list/cancel (default: LIGHTWORKER_MCP_TOOLS). */
  toolSet?: ToolSet;
  /** The command table (tests may pass their own). */
  commands?: ReadonlyMap<string, CommandDef>;
  /** Clock for the mutation rate limit (tests). */
  now?: () => number;
  /** Where unexpected errors are reported (default stderr). Never stdout: that is the protocol. */
  log?: (line: string) => void;
}

/** The caller depth of this process: LIGHTWORKER_DEPTH, or a worker ancestor's (core/caller-depth.ts). */
export function depthFromEnv(): number {
  return callerDepth();
}

/**
 * An MCP server (official SDK, low-level `Server`) over the command table: one tool per command of
 * the set that exists at start-up. Not connected to any transport; see `runStdioServer`.
 */
export function createServer(engine: Engine, opts: McpServerOptions = {}): Server {
  const commands = opts.commands ?? COMMANDS;
  const tools = buildTools(commands, opts.toolSet ?? toolSetFromEnv());
  const byName = new Map(tools.map((t) => [t.name, t]));
  const shown = visibleTools(tools, engine.config.approvals.allow_mcp);
  const listed = { tools: listedTools(shown) };
  const depth = opts.depth ?? depthFromEnv();
  const log = opts.log ?? ((line: string) => process.stderr.write(line.endsWith('\n') ? line : line + '\n'));
  const limiter = new MutationLimiter(() => engine.config.limits.mcp_mutations_per_minute, opts.now);

  const server = new Server(
    { name: SERVER_NAME, version: SERVER_VERSION, title: 'LightWorker' },
    { capabilities: { tools: { listChanged: false } }, instructions: serverInstructions(shown) },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => listed);

  // A loose schema here: the SDK then checks params itself and answers -32602 (its strict schema at
  // this level would surface a raw zod dump as -32603 "internal error").
  server.setRequestHandler(LooseCallToolRequest, async (raw, extra): Promise<CallToolResult> => {
    const req = CallToolRequestSchema.parse(raw);
    const tool = byName.get(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    try {
      if (!tool.command) throw new AppError('unavailable', `${tool.name} is not yet available in this LightWorker build`);
      if (!tool.command.readOnly) limiter.take(tool.name);
      const ctx: CommandContext = { engine, face: 'mcp', depth, signal: extra.signal };
      const result = await runCommand(commands, ctx, tool.name, req.params.arguments ?? {});
      return okResult(result);
    } catch (err) {
      if (isAppError(err)) return errorResult(err.code, err.message);
      // A bug: report it to the caller as a tool failure, keep serving, leave a trace on stderr.
      log(`lightworker mcp: ${tool.name} failed: ${(err as Error)?.stack ?? String(err)}`);
      return errorResult('internal', err instanceof Error ? err.message : String(err));
    }
  });

  server.onerror = (err) => {
    if (process.env.LIGHTWORKER_DEBUG) log(`lightworker mcp: ${err.message}`);
  };
  return server;
}

function okResult(result: unknown): CallToolResult {
  const structured = result && typeof result === 'object' && !Array.isArray(result) ? (result as Record<string, unknown>) : { result };
  let text = JSON.stringify(structured);
  if (text.length > MAX_TEXT_CHARS) text = `${text.slice(0, MAX_TEXT_CHARS)}… (cut; the full result is in structuredContent)`;
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

function errorResult(code: string, message: string): CallToolResult {
  const error = { code, message: redactText(message) };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error) }], structuredContent: error };
}
