import { defineStore } from 'pinia';
import { ref } from 'vue';
import type { CommandArgs } from '../api/commands.js';
import { api, isUnknownCommand } from '../api/client.js';
import type { CommandResult } from '../api/commands.js';
import type { Config } from '../api/types.js';

type Price = { input: number; cached?: number; output: number };

export const MCP_CLIENTS = ['claude-code', 'codex', 'cursor', 'vscode', 'windsurf', 'json'] as const;
export type McpClient = (typeof MCP_CLIENTS)[number];

function snippetText(data: unknown): string {
  if (typeof data === 'string') return data;
  const d = (data ?? {}) as Record<string, unknown>;
  for (const k of ['text', 'snippet', 'config', 'content']) if (typeof d[k] === 'string') return d[k] as string;
  return JSON.stringify(data, null, 2);
}

/** config.toml through get_settings / update_settings, and the MCP snippet per client. */
export const useSettings = defineStore('settings', () => {
  const config = ref<Config | null>(null);
  const path = ref('');
  /** The price table in effect and its built-in rows (get_settings). */
  const prices = ref<{ effective: Record<string, Price>; builtin: Record<string, Price> } | null>(null);
  /** The built-in profiles (planner, fast_worker, …) routing may name besides [profiles]. */
  const builtinProfiles = ref<Record<string, unknown>>({});
  /** Whether each gateway key variable is set in the server's environment (get_settings; never the value). */
  const keyEnvSet = ref<Record<string, boolean>>({});
  /** The route each profile's, routed model's and other task will take, as the engine plans them (get_settings). */
  const routes = ref<CommandResult<'get_settings'>['routes']>([]);
  const error = ref<string | null>(null);
  const saving = ref(false);
  const savedAt = ref<number | null>(null);
  const snippets = ref<Partial<Record<McpClient, string>>>({});
  const snippetError = ref<string | null>(null);

  async function load(): Promise<void> {
    try {
      const r = await api().call('get_settings');
      config.value = r.config;
      prices.value = r.prices ?? null;
      builtinProfiles.value = r.builtinProfiles ?? {};
      keyEnvSet.value = r.keyEnvSet ?? {};
      routes.value = r.routes ?? [];
      path.value = r.path;
      error.value = null;
    } catch (err) {
      error.value = isUnknownCommand(err) ? 'settings are not available in this build' : (err as Error).message;
    }
  }

  /** Save some sections; the server validates the whole result and names a bad key. */
  async function save(sections: CommandArgs<'update_settings'>[0]['settings']): Promise<boolean> {
    saving.value = true;
    try {
      const r = await api().call('update_settings', { settings: sections });
      config.value = r.config;
      error.value = null;
      // A gateway just added names a variable get_settings has not looked at yet.
      void load();
      savedAt.value = Date.now();
      return true;
    } catch (err) {
      error.value = (err as Error).message;
      return false;
    } finally {
      saving.value = false;
    }
  }

  /** Save the [prices] table (replaced whole) and reload the effective one. */
  async function savePrices(table: Record<string, Price>): Promise<boolean> {
    const ok = await save({ prices: table });
    if (ok) await load();
    return ok;
  }

  async function loadSnippet(client: McpClient): Promise<void> {
    try {
      snippets.value = { ...snippets.value, [client]: snippetText(await api().call('mcp_config', { client })) };
      snippetError.value = null;
    } catch (err) {
      snippetError.value = isUnknownCommand(err) ? 'MCP snippets are not available yet (the mcp_config command is missing); run `lightworker mcp-config --client …` instead' : (err as Error).message;
    }
  }

  return { config, path, prices, builtinProfiles, keyEnvSet, routes, error, saving, savedAt, snippets, snippetError, load, save, savePrices, loadSnippet };
});
