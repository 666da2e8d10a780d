import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { parseConfig, type Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { PRIVATE_FILE } from '../core/private-home.js';

/**
 * Ready-made `[gateways.NAME]` blocks (`lightworker gateways add PRESET`). A preset is appended to
 * config.toml as text — the user's comments and layout stay — and only after the whole file still
 * validates. Keys are never written: the block names the variable that holds it.
 */
export interface GatewayPreset {
  description: string;
  base_url: string;
  key_env: string;
  auth: 'bearer' | 'x-api-key';
  wire_api: 'responses' | 'messages' | 'chat';
  model_map: Record<string, string>;
}

export const GATEWAY_PRESETS: Record<string, GatewayPreset> = {
  'zcode-glm': {
    description: "Claude Code on Z.ai's GLM Coding Plan (Anthropic-compatible endpoint, Bearer token, GLM models)",
    base_url: 'https://api.z.ai/api/anthropic',
    key_env: 'ZAI_API_KEY',
    auth: 'bearer',
    wire_api: 'messages',
    model_map: { 'claude-sonnet-4-5': 'glm-4.6', 'claude-haiku-4-5': 'glm-4.5-air' },
  },
};

const q = (s: string) => JSON.stringify(s);

/** The TOML block of a preset under `name`, with optional overrides. */
export function presetBlock(name: string, p: GatewayPreset): string {
  const map = Object.entries(p.model_map).map(([ours, theirs]) => `${q(ours)} = ${q(theirs)}`).join(', ');
  return [
    `# ${p.description}. Export ${p.key_env} where LightWorker runs; submit with --gateway ${name}.`,
    `[gateways.${q(name)}]`,
    `base_url = ${q(p.base_url)}`,
    `key_env = ${q(p.key_env)}`,
    `auth = ${q(p.auth)}`,
    `wire_api = ${q(p.wire_api)}`,
    `model_map = { ${map} }`,
    '',
  ].join('\n');
}

/**
 * Append preset `preset` as `[gateways.<name>]` to the config file at `path`. Refuses (changing
 * nothing) an unknown preset, a name already configured, or a result that would not validate.
 * Returns the new config and the block written.
 */
export function addGatewayPreset(path: string, preset: string, over: { name?: string; base_url?: string; key_env?: string } = {}): { config: Config; block: string; name: string } {
  const base = GATEWAY_PRESETS[preset];
  if (!base) throw new AppError('invalid_input', `preset: unknown gateway preset "${preset}" (known: ${Object.keys(GATEWAY_PRESETS).join(', ')})`, { field: 'preset' });
  const name = over.name ?? preset;
  const current = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const existing = parseConfig(current.trim() ? parseToml(current) : {}, path);
  if (existing.gateways[name]) throw new AppError('conflict', `name: [gateways.${name}] already exists in ${path}; pick another --name or edit it there`, { field: 'name' });
  const block = presetBlock(name, { ...base, ...(over.base_url ? { base_url: over.base_url } : {}), ...(over.key_env ? { key_env: over.key_env } : {}) });
  const next = `${current}${current && !current.endsWith('\n') ? '\n' : ''}${current ? '\n' : ''}${block}`;
  const config = parseConfig(parseToml(next), path);
  writeFileSync(path, next, { encoding: 'utf8', mode: PRIVATE_FILE });
  return { config, block, name };
}
