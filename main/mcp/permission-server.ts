import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { openEngine } from '../app.js';
import { decidePermission } from '../requests/permission.js';
import { playStartHook } from '../runner/permission-hook.js';
import { SERVER_VERSION } from './server.js';
import { LineTransport } from './stdio-transport.js';

/** The one tool Claude Code calls as `--permission-prompt-tool mcp__<server>__permission_prompt`. */
export const PERMISSION_TOOL = 'permission_prompt';

const callInput = z.object({ tool_name: z.string().min(1).max(200), input: z.record(z.string(), z.unknown()).default({}), tool_use_id: z.string().optional() });

/**
 * `lightworker mcp --permission-for <task>`: an MCP server bound to one task for one Claude Code turn,
 * with a single tool that answers Claude's permission prompts (requests/permission.ts decides). Claude
 * starts it from the turn's --mcp-config and ends it with the turn; it never leads a scheduler.
 */
export async function runPermissionServer(opts: { home?: string; taskId: string }): Promise<void> {
  const engine = openEngine({ home: opts.home });
  const server = new Server({ name: 'lightworker-permission', version: SERVER_VERSION }, { capabilities: { tools: { listChanged: false } } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: PERMISSION_TOOL,
        description: 'LightWorker decides a permission prompt: allow, deny, or ask a person.',
        inputSchema: { type: 'object', properties: { tool_name: { type: 'string' }, input: { type: 'object' }, tool_use_id: { type: 'string' } }, required: ['tool_name', 'input'] },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, (req): CallToolResult => {
    const parsed = callInput.safeParse(req.params.arguments ?? {});
    const answer = parsed.success
      ? engine.write(() => decidePermission(engine.db, engine.config, opts.taskId, { toolName: parsed.data.tool_name, input: parsed.data.input }))
      : { behavior: 'deny' as const, message: `LightWorker: malformed permission prompt (${parsed.error.issues[0]?.message})` };
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  const transport = new LineTransport(process.stdin, process.stdout);
  const stop = () => {
    void server.close().catch(() => undefined);
    engine.close();
    process.exit(0);
  };
  transport.onclose = stop;
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, stop);
  await playStartHook();
  await server.connect(transport);
  await new Promise<void>(() => undefined);
}
