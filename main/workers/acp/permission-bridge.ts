import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { DriverSpec } from './spec.js';

/**
 * session/request_permission → LightWorker's permission tool, the same one Claude Code's
 * --permission-prompt-tool calls (`lightworker mcp --permission-for <task>`, requests/permission.ts):
 * the same policy, grants, `--remember`, inbox and answer path. Started on the first ask of a turn.
 */

/** ACP tool kinds in the vocabulary the policy knows (requests/policy.ts: Write/Edit are file writes, Bash a shell). */
const TOOL_BY_KIND: Record<string, string> = { edit: 'Edit', delete: 'Write', move: 'Write', execute: 'Bash', fetch: 'WebFetch', read: 'Read', search: 'Grep' };

/** The permission tool's answer (requests/permission.ts PermissionAnswer, as JSON in its text block). */
export type PermissionAnswer = { behavior: 'allow'; updatedInput?: Record<string, unknown> } | { behavior: 'deny'; message: string; interrupt?: boolean };

export interface AskedToolCall {
  toolCallId?: string;
  title?: string | null;
  kind?: string | null;
  rawInput?: unknown;
  locations?: { path: string }[] | null;
}

/** The permission tool's call for an ACP tool call: its tool name and an input naming the file or command. */
export function permissionCallOf(call: AskedToolCall): { tool_name: string; input: Record<string, unknown> } {
  const raw = call.rawInput && typeof call.rawInput === 'object' ? { ...(call.rawInput as Record<string, unknown>) } : {};
  const tool = TOOL_BY_KIND[String(call.kind)] ?? (call.title || 'tool');
  const path = call.locations?.[0]?.path ?? raw.file_path ?? raw.filePath ?? raw.absolute_path ?? raw.path;
  const input: Record<string, unknown> = { ...raw };
  if (typeof path === 'string' && (tool === 'Edit' || tool === 'Write')) input.file_path = path;
  if (tool === 'Bash' && typeof raw.command !== 'string') input.command = typeof raw.cmd === 'string' ? raw.cmd : (call.title ?? '');
  if (call.title && !input.description) input.description = call.title;
  return { tool_name: tool, input };
}

export class PermissionBridge {
  #client: Promise<Client> | null = null;

  constructor(readonly server: NonNullable<DriverSpec['permission']>) {}

  #connect(): Promise<Client> {
    this.#client ??= (async () => {
      const client = new Client({ name: 'lightworker-acp', version: '1' });
      await client.connect(new StdioClientTransport({ command: this.server.command, args: this.server.args, env: this.server.env, stderr: 'inherit' }));
      return client;
    })();
    return this.#client;
  }

  async decide(call: AskedToolCall): Promise<PermissionAnswer> {
    const client = await this.#connect();
    const res = await client.callTool({ name: 'permission_prompt', arguments: { ...permissionCallOf(call), tool_use_id: call.toolCallId } });
    const block = (res.content as { type: string; text?: string }[] | undefined)?.find((c) => c.type === 'text');
    return JSON.parse(block?.text ?? '{"behavior":"deny","message":"LightWorker: no answer from the permission tool"}') as PermissionAnswer;
  }

  async close(): Promise<void> {
    if (!this.#client) return;
    const c = await this.#client.catch(() => null);
    await c?.close().catch(() => undefined);
  }
}
