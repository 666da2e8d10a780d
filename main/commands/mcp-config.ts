import { resolve } from 'node:path';
import { z } from 'zod';
import { defineCommand } from './table.js';
import type { Config } from '../core/config.js';
import { CLI_AUTH } from '../workers/credentials.js';
import { mcpLaunch, type Launch } from '../platform/launch.js';

export const MCP_CLIENTS = ['codex', 'claude-code', 'cursor', 'vscode', 'windsurf', 'json'] as const;
export type McpClient = (typeof MCP_CLIENTS)[number];

export interface ClientSnippet {
  client: McpClient;
  /** Where the snippet goes. */
  target: string;
  format: 'toml' | 'json';
  /** Paste-ready text. */
  snippet: string;
  /** How to use it (never part of the snippet itself, so the snippet can be redirected into a file). */
  notes: string[];
  launch: Launch;
}

/**
 * The key variables this configuration reads from the environment, sorted: every gateway's `key_env`,
 * every `[workers.NAME] keys`, and the CLI's own key variables of a worker with `auth = "env"`. Codex
 * passes an MCP server only a short whitelist of its environment (PATH, HOME, …): without `env_vars`
 * naming these, the runner the MCP server starts never sees the keys the user exported.
 */
export function forwardedKeyVars(config: Config): string[] {
  const names = new Set<string>();
  for (const g of Object.values(config.gateways)) names.add(g.key_env);
  for (const [worker, w] of Object.entries(config.workers)) {
    const block = (w ?? {}) as { keys?: string[]; auth?: string };
    for (const k of block.keys ?? []) names.add(k);
    if (block.auth === 'env') for (const k of CLI_AUTH[worker]?.keys ?? []) names.add(k);
  }
  return [...names].sort();
}

/**
 * A working MCP client configuration for `lightworker mcp`. LIGHTWORKER_HOME is always set explicitly:
 * Codex passes servers only a short whitelist of variables (not XDG_STATE_HOME), and Claude Code
 * ignores `cwd`, so nothing may depend on the client's environment or working directory.
 */
export function clientSnippet(client: McpClient, home: string, launch: Launch, name = 'lightworker', keyVars: readonly string[] = []): ClientSnippet {
  const env = { LIGHTWORKER_HOME: home, ...launch.env };
  const server = { command: launch.command, args: launch.args, env };
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  const notes: string[] = launch.note ? [launch.note] : [];
  switch (client) {
    case 'codex': {
      const q = (s: string) => JSON.stringify(s); // JSON string escapes are valid TOML basic strings
      const snippet = [
        `[mcp_servers.${name}]`,
        `command = ${q(launch.command)}`,
        `args = [${launch.args.map(q).join(', ')}]`,
        ...(keyVars.length ? [`env_vars = [${keyVars.map(q).join(', ')}]    # the keys config.toml names: Codex passes no others`] : []),
        'required = true                       # fail instead of running silently without LightWorker',
        'startup_timeout_sec = 30',
        'tool_timeout_sec = 120                # wait_tasks blocks up to 55 s',
        'default_tools_approval_mode = "approve"  # "writes" makes codex exec refuse every write tool',
        '',
        `[mcp_servers.${name}.env]`,
        ...Object.entries(env).map(([k, v]) => `${k} = ${q(v)}`),
        '',
      ].join('\n');
      notes.push('Append to $CODEX_HOME/config.toml (default ~/.codex/config.toml).');
      if (!keyVars.length) notes.push('Codex passes an MCP server only a short list of variables: add env_vars = ["MY_KEY"] for a key the runner needs (a gateway key_env adds it here).');
      return { client, target: '~/.codex/config.toml', format: 'toml', snippet, notes, launch };
    }
    case 'claude-code': {
      const add = ['claude', 'mcp', 'add', '--scope', 'user', ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]), name, '--', launch.command, ...launch.args];
      notes.push(
        'Save as .mcp.json in the project, or pass it with `claude --mcp-config FILE`.',
        `Or register it for your user: ${add.map(shellQuote).join(' ')}`,
        `In \`claude -p\` allow the tools explicitly: --allowedTools mcp__${name}`,
      );
      return { client, target: '.mcp.json', format: 'json', snippet: json({ mcpServers: { [name]: { type: 'stdio', ...server } } }) + '\n', notes, launch };
    }
    case 'cursor':
      notes.push('Save as ~/.cursor/mcp.json (all projects) or .cursor/mcp.json (one project); merge into mcpServers if the file exists.');
      return { client, target: '~/.cursor/mcp.json', format: 'json', snippet: json({ mcpServers: { [name]: server } }) + '\n', notes, launch };
    case 'vscode':
      notes.push('Save as .vscode/mcp.json in the workspace (or add to the "mcp" user setting); merge into "servers" if the file exists.');
      return { client, target: '.vscode/mcp.json', format: 'json', snippet: json({ servers: { [name]: { type: 'stdio', ...server } } }) + '\n', notes, launch };
    case 'windsurf':
      notes.push('Save as ~/.codeium/windsurf/mcp_config.json; merge into mcpServers if the file exists.');
      return { client, target: '~/.codeium/windsurf/mcp_config.json', format: 'json', snippet: json({ mcpServers: { [name]: server } }) + '\n', notes, launch };
    case 'json':
      notes.push('A stdio server entry: command, args and env.');
      return { client, target: 'any MCP client', format: 'json', snippet: json({ name, type: 'stdio', ...server }) + '\n', notes, launch };
  }
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export const mcpConfigCommand = defineCommand({
  name: 'mcp_config',
  description: 'A paste-ready MCP client configuration for this LightWorker (codex, claude-code, cursor, vscode, windsurf, json).',
  input: z.strictObject({
    client: z.enum(MCP_CLIENTS),
    home: z.string().min(1).max(4096).optional().describe('LIGHTWORKER_HOME to put in the snippet (default: this home)'),
    launch: z.enum(['auto', 'source', 'packaged']).default('auto'),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'letters, digits, _ -').default('lightworker'),
  }),
  readOnly: true,
  handler(ctx, input) {
    return clientSnippet(input.client, input.home ? resolve(input.home) : ctx.engine.home.root, mcpLaunch(input.launch), input.name, forwardedKeyVars(ctx.engine.config));
  },
});
