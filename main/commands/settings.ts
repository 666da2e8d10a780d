import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { z } from 'zod';
import { configSchema, parseConfig } from '../core/config.js';
import { AppError } from '../core/errors.js';
import { DEFAULT_PRICES, effectivePrices } from '../tasks/cost.js';
import { defineCommand } from './table.js';

const SECTIONS = Object.keys(configSchema.shape) as [keyof typeof configSchema.shape, ...(keyof typeof configSchema.shape)[]];
/** Sections that are maps of named entries: a new value replaces the whole map, so entries can be removed. */
const MAPS = new Set<string>(['profiles', 'gateways', 'workers', 'prices']);

function readRaw(path: string): Record<string, unknown> {
  if (!existsSync(path)) return {};
  try {
    return parseToml(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new AppError('invalid_input', `${path}: not valid TOML: ${(err as Error).message}; fix the file by hand first`);
  }
}

export const getSettings = defineCommand({
  name: 'get_settings',
  description: 'The effective configuration (config.toml merged over the defaults) and where it lives.',
  input: z.strictObject({}),
  readOnly: true,
  handler(ctx) {
    const prices = { effective: effectivePrices(ctx.engine.config), builtin: DEFAULT_PRICES };
    return { path: ctx.engine.home.config, exists: existsSync(ctx.engine.home.config), config: ctx.engine.config, prices };
  },
});

export const updateSettings = defineCommand({
  name: 'update_settings',
  description: 'Change sections of config.toml (validated; map sections like gateways are replaced whole) and reload.',
  input: z.strictObject({
    settings: z.partialRecord(z.enum(SECTIONS), z.record(z.string(), z.unknown())),
  }),
  readOnly: false,
  handler(ctx, input) {
    const path = ctx.engine.home.config;
    const raw = readRaw(path);
    for (const [section, value] of Object.entries(input.settings)) {
      if (!value) continue;
      const prev = raw[section];
      raw[section] = MAPS.has(section) || typeof prev !== 'object' || prev === null ? value : { ...(prev as object), ...value };
    }
    const config = parseConfig(raw, 'settings');
    // Comments of a hand-written file are not kept: the file is rewritten from the merged values.
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, `# Written by LightWorker settings; see \`lightworker init --force\` for the documented template.\n${stringifyToml(raw)}\n`, 'utf8');
    renameSync(tmp, path);
    ctx.engine.config = config;
    return { path, config };
  },
});

export const SETTINGS_COMMANDS = [getSettings, updateSettings];
