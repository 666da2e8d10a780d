import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { z } from 'zod';
import { configSchema, parseConfig, type Config } from '../core/config.js';
import { configProblems } from '../core/config-rules.js';
import { AppError } from '../core/errors.js';
import { editToml, isPlainObject } from '../core/toml-edit.js';
import { DEFAULT_PRICES, effectivePrices } from '../tasks/cost.js';
import { defineCommand, requirePersonOrAllowed } from './table.js';
import { PRIVATE_FILE } from '../core/private-home.js';
import { BUILTIN_PROFILE_SPECS } from '../core/profiles.js';
import { formatPlannedRoute, plannedRoutes, plannedTaskRoute, routeFix } from '../tasks/route-table.js';
import { taskInputSchema } from '../tasks/schema.js';
import { allWorkerNames } from '../workers/registry.js';

type Section = keyof typeof configSchema.shape;
type Doc = Record<string, unknown>;

const SECTIONS = Object.keys(configSchema.shape) as [Section, ...Section[]];

/** The schema under defaults and optionals, to see what kind of value a section holds. */
function innerType(schema: z.ZodType): string {
  let s = schema as unknown as { _zod: { def: { type: string; innerType?: unknown } } };
  while (['default', 'prefault', 'optional'].includes(s._zod.def.type) && s._zod.def.innerType) s = s._zod.def.innerType as typeof s;
  return s._zod.def.type;
}

/**
 * Sections that are maps of named entries (profiles, gateways, workers, setup, prices, and any record a
 * later section adds): a new value replaces the whole map, so entries can be removed.
 */
const MAPS = new Set<string>(SECTIONS.filter((s) => innerType(configSchema.shape[s]) === 'record'));

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * What of `update` to write: keys already in the file are kept (and looked into); a key the file does
 * not have is written only when it differs from the value in force (a form that sends every field back
 * adds nothing but what the user changed). `null` removes a key the file has (its default applies again).
 */
function changedPart(update: Doc, inFile: unknown, inForce: unknown): Doc {
  const file = isPlainObject(inFile) ? inFile : {};
  const force = isPlainObject(inForce) ? inForce : {};
  const out: Doc = {};
  for (const [k, v] of Object.entries(update)) {
    if (v === undefined) continue;
    if (v === null) {
      if (k in file) out[k] = null; // TOML has no null: it asks to remove the key from the file
    } else if (k in file) out[k] = isPlainObject(v) && isPlainObject(file[k]) ? changedPart(v, file[k], force[k]) : v;
    else if (!sameValue(v, force[k])) out[k] = v;
  }
  return out;
}

/**
 * A gateway written with the seed's `response_mode` is held as `wire_api`: a form that sends the gateway back
 * with that same wire_api (skipped, as it equals the value in force) must not lose the protocol when the map
 * is replaced whole. A wire_api the update does write replaces the response_mode.
 */
function keepResponseModes(part: Doc, inFile: unknown): Doc {
  const file = isPlainObject(inFile) ? inFile : {};
  for (const [name, g] of Object.entries(part)) {
    const was = file[name];
    if (isPlainObject(g) && isPlainObject(was) && was.response_mode !== undefined && g.wire_api === undefined && g.response_mode === undefined) g.response_mode = was.response_mode;
  }
  return part;
}

function withoutNulls(doc: Doc): Doc {
  return Object.fromEntries(Object.entries(doc).filter(([, v]) => v !== null).map(([k, v]) => [k, isPlainObject(v) ? withoutNulls(v) : v]));
}

function readRaw(path: string): { text: string; raw: Doc } {
  if (!existsSync(path)) return { text: '', raw: {} };
  const text = readFileSync(path, 'utf8');
  try {
    return { text, raw: parseToml(text) as Doc };
  } catch (err) {
    throw new AppError('invalid_input', `${path}: not valid TOML: ${(err as Error).message}; fix the file by hand first`);
  }
}

/** The config the file holds now (another process may have changed it), else the one in force. */
function configInForce(raw: Doc, fallback: Config): Config {
  try {
    return parseConfig(raw);
  } catch {
    return fallback;
  }
}

/** `next` as file text: `text` edited in place (comments and layout kept), else written afresh. */
function fileText(text: string, next: Doc): string {
  try {
    return editToml(text, next);
  } catch {
    // A layout the in-place editor cannot follow (e.g. a table split across dotted keys and headers):
    // correctness over comments.
    return `# Written by LightWorker settings; see \`lightworker init --force\` for the documented template.\n${stringifyToml(next)}\n`;
  }
}

export const getSettings = defineCommand({
  name: 'get_settings',
  description: 'The effective configuration (config.toml merged over the defaults), the built-in profiles, and where it lives.',
  input: z.strictObject({}),
  readOnly: true,
  handler(ctx) {
    const prices = { effective: effectivePrices(ctx.engine.config), builtin: DEFAULT_PRICES };
    // Whether each gateway's key variable is set where LightWorker runs (never its value), so a form can say so.
    const keyEnvSet = Object.fromEntries(Object.values(ctx.engine.config.gateways).map((g) => [g.key_env, Boolean(process.env[g.key_env])]));
    // The built-in profiles are what a [profiles.NAME] of the same name overrides, and what routing may name.
    // Where each profile's, each routed model's and every other task goes, before any of them runs.
    const routes = plannedRoutes(ctx.engine.config).map((r) => ({ ...r, text: formatPlannedRoute(r), fix: routeFix(r) }));
    return { path: ctx.engine.home.config, exists: existsSync(ctx.engine.home.config), config: ctx.engine.config, prices, builtinProfiles: BUILTIN_PROFILE_SPECS, keyEnvSet, routes };
  },
});

export const planRoute = defineCommand({
  name: 'plan_route',
  description: 'The route a task with these fields would take (worker, model, gateway, upstream model, protocol, fallback), as delegate_task decides it; creates nothing.',
  input: taskInputSchema.pick({ kind: true, worker: true, model: true, reasoning_effort: true, profile: true, gateway: true, type: true }),
  readOnly: true,
  handler(ctx, input) {
    const route = plannedTaskRoute(ctx.engine.config, input, allWorkerNames(ctx.engine));
    return { route: { ...route, text: formatPlannedRoute(route), fix: routeFix(route) } };
  },
});

export const updateSettings = defineCommand({
  name: 'update_settings',
  description: 'Change sections of config.toml (validated; map sections like gateways are replaced whole; null removes a key) and reload.',
  input: z.strictObject({
    settings: z.partialRecord(z.enum(SECTIONS), z.record(z.string(), z.unknown())),
  }),
  readOnly: false,
  handler(ctx, input) {
    // The approval policy is the person's: an agent that could change settings could allow itself.
    requirePersonOrAllowed(ctx, 'changing settings');
    const path = ctx.engine.home.config;
    const { text, raw } = readRaw(path);
    const before = configInForce(raw, ctx.engine.config);
    const next: Doc = structuredClone(raw);
    for (const [section, value] of Object.entries(input.settings)) {
      if (!value) continue;
      const changed = changedPart(value, raw[section], before[section as Section]);
      const part = section === 'gateways' ? keepResponseModes(changed, raw[section]) : changed;
      if (!Object.keys(part).length && !(section in raw)) continue; // nothing new, nothing to remove
      next[section] = withoutNulls(MAPS.has(section) ? part : { ...(raw[section] as Doc | undefined), ...part });
    }
    // Validate everything before writing anything: the schema names a bad key or type, the rules a model
    // outside models.allow or a profile's unknown worker (only problems this change brings: an older one elsewhere is doctor's to report).
    const config = parseConfig(next, 'settings');
    const workersOf = (c: typeof config) => allWorkerNames({ db: ctx.engine.db, home: ctx.engine.home, config: c });
    const known = new Set(configProblems(before, raw, workersOf(before)).map((p) => `${p.key}\n${p.message}`));
    const added = configProblems(config, next, workersOf(config)).filter((p) => !known.has(`${p.key}\n${p.message}`));
    if (added.length) throw new AppError('invalid_input', `settings: ${added[0].key}: ${added[0].message}`, { key: added[0].key, field: added[0].key });
    const out = fileText(text, next);
    if (out !== text) {
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, out, { encoding: 'utf8', mode: PRIVATE_FILE });
      renameSync(tmp, path);
    }
    ctx.engine.config = config;
    return { path, config };
  },
});

export const SETTINGS_COMMANDS = [getSettings, planRoute, updateSettings];
