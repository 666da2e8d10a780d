import type { Command } from 'commander';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { AppError } from '../core/errors.js';
import { setIn } from '../core/toml-edit.js';
import { withEngine } from './context.js';
import { out, printJson } from './output.js';

type Doc = Record<string, unknown>;

/** A value as typed on the command line: TOML (`8`, `true`, `["a", "b"]`, `"text"`), else the text itself. */
export function parseSettingValue(text: string): unknown {
  try {
    return (parseToml(`v = ${text}`) as Doc).v;
  } catch {
    return text;
  }
}

/** `lightworker settings` (show) and `settings set KEY VALUE`, over get_settings / update_settings. */
export function registerSettingsCommands(program: Command): void {
  const settings = program
    .command('settings')
    .description('show the configuration in force (config.toml over the defaults), or change one key with `settings set`')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('get_settings', {})) as { path: string; exists: boolean; config: Doc; routes: { text: string }[] };
        if (o.json) return printJson(r);
        const routes = r.routes.map((x) => `#   ${x.text}`).join('\n');
        out(`# ${r.path}${r.exists ? '' : ' (absent: all defaults)'}\n${stringifyToml(r.config)}\n\n# Routes, as tasks will take them:\n${routes}`);
      });
    });
  settings
    .command('set')
    .description('set one key, e.g. `settings set scheduler.max_concurrency 8` (validated; the rest of config.toml, comments included, stays as written)')
    .argument('<key>', 'dotted key: section.key, e.g. models.fast or profiles.deep.model')
    .argument('<value>', 'a TOML value (8, true, ["a","b"], "text"); bare text is taken as a string')
    .option('--json')
    .action(async (key: string, text: string, o, cmd: Command) => {
      const path = key.split('.').filter(Boolean);
      if (path.length < 2) throw new AppError('invalid_input', `key: "${key}" names no key inside a section (e.g. scheduler.max_concurrency)`, { field: 'key' });
      await withEngine(cmd, async (call) => {
        const current = ((await call('get_settings', {})) as { config: Doc }).config;
        // The whole section in force with the one change: update_settings writes only what differs.
        const section = setIn(current[path[0]], path.slice(1), parseSettingValue(text));
        const r = (await call('update_settings', { settings: { [path[0]]: section } })) as { path: string; config: Doc };
        if (o.json) return printJson(r);
        out(`${key} = ${JSON.stringify(path.reduce<unknown>((v, k) => (v as Doc)[k], r.config))}  (${r.path})`);
      });
    });
  settings
    .command('unset')
    .description('remove one key (or a named entry such as gateways.local) from config.toml, so its default applies again')
    .argument('<key>', 'dotted key, e.g. verify.timeout_s or profiles.deep')
    .option('--json')
    .action(async (key: string, o, cmd: Command) => {
      const path = key.split('.').filter(Boolean);
      if (path.length < 2) throw new AppError('invalid_input', `key: "${key}" names no key inside a section (e.g. verify.timeout_s)`, { field: 'key' });
      await withEngine(cmd, async (call) => {
        const current = ((await call('get_settings', {})) as { config: Doc }).config;
        const section = setIn(current[path[0]], path.slice(1), null);
        const r = (await call('update_settings', { settings: { [path[0]]: section } })) as { path: string; config: Doc };
        if (o.json) return printJson(r);
        out(`${key} removed  (${r.path})`);
      });
    });
}
