import type { Command } from 'commander';
import type { WorkerListing } from '../commands/workers.js';
import { AppError } from '../core/errors.js';
import { withEngine } from './context.js';
import { err, out, printJson, table } from './output.js';
import { GATEWAY_PRESETS } from '../workers/gateway-presets.js';

function jsonArgv(name: string) {
  return (v: string): string[] => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      throw new AppError('invalid_input', `${name}: not valid JSON (expected an array of strings, e.g. '["agent","run","{prompt}"]')`, { field: name });
    }
    if (!Array.isArray(parsed) || parsed.some((a) => typeof a !== 'string')) throw new AppError('invalid_input', `${name}: must be a JSON array of strings`, { field: name });
    return parsed as string[];
  };
}

function yesNo(v: boolean | null): string {
  return v === null ? '?' : v ? 'yes' : 'no';
}

/** `lightworker workers [--json]`, `workers link NAME --command-json …`, `workers unlink NAME`. */
export function registerWorkerCommands(program: Command): void {
  const workers = program
    .command('workers')
    .description('worker CLIs: installed, version, authenticated, capabilities (never runs a model)')
    .option('--json')
    .action(async (o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('list_workers', {})) as { workers: WorkerListing[]; gateways: { name: string; paused: string }[] };
        if (o.json) return printJson(r);
        out(
          table(
            ['worker', 'installed', 'version', 'auth', 'sessions', 'schema', 'sandbox', 'note'],
            r.workers.map((w) => [
              w.name, yesNo(w.installed), w.version ?? (w.versionNote ? 'unknown' : '-'), yesNo(w.authenticated), yesNo(w.capabilities.sessions), yesNo(w.capabilities.structuredOutput),
              w.capabilities.sandboxModes.join(',') || '-', w.paused ?? w.reason ?? [w.acp, w.auth.ok ? w.auth.source : `${w.auth.source}: ${w.auth.hint}`].filter(Boolean).join('; '),
            ]),
          ),
        );
        for (const g of r.gateways) out(g.paused);
      });
    });

  workers
    .command('link <name>')
    .description('link a generic agent CLI by argv template ({prompt_file}, {workdir}, {session}; without a prompt placeholder the prompt goes to stdin)')
    .requiredOption('--command-json <argv>', 'JSON argv template ({prompt_file}: a private file holding the prompt; {prompt}: the prompt in argv, readable by every local user)', jsonArgv('command_json'))
    .option('--resume-json <argv>', 'JSON argv template for follow-ups containing {session}', jsonArgv('resume_json'))
    .option('--version-json <argv>', 'JSON argv that prints its version, e.g. \'["agent","--version"]\' (without it `workers` and `doctor` run nothing of it)', jsonArgv('version_json'))
    .option('--max-concurrency <n>', 'turns of this worker at once', (v) => Number(v))
    .option('--json')
    .action(async (name: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('link_worker', { name, command_json: o.commandJson, resume_json: o.resumeJson, version_json: o.versionJson, max_concurrency: o.maxConcurrency });
        if (o.json) printJson(r);
        else out(`linked ${name}: ${JSON.stringify(o.commandJson)}${o.resumeJson ? ` (resume ${JSON.stringify(o.resumeJson)})` : ''}`);
        if (r.warning && !o.json) err(`warning: ${r.warning}`);
      });
    });

  workers
    .command('unlink <name>')
    .description('remove a linked worker CLI')
    .option('--json')
    .action(async (name: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = await call('unlink_worker', { name });
        if (o.json) printJson(r);
        else out(`unlinked ${name}`);
      });
    });
}

/** `lightworker gateways add PRESET [--name N] [--base-url U] [--key-env V]`. */
export function registerGatewayCommands(program: Command): void {
  const gateways = program.command('gateways').description('model gateways ([gateways.NAME] in config.toml)');
  gateways
    .command('add <preset>')
    .description(`append a ready-made gateway block to config.toml (presets: ${Object.entries(GATEWAY_PRESETS).map(([k, p]) => `${k} — ${p.description}`).join('; ')})`)
    .option('--name <name>', 'gateway name (default: the preset name)')
    .option('--base-url <url>', "override the preset's base URL")
    .option('--key-env <var>', "override the variable that holds the key")
    .option('--json')
    .action(async (preset: string, o, cmd: Command) => {
      await withEngine(cmd, async (call) => {
        const r = (await call('add_gateway', { preset, name: o.name, base_url: o.baseUrl, key_env: o.keyEnv })) as { gateway: string; path: string; block: string };
        if (o.json) return printJson(r);
        out(`added [gateways.${r.gateway}] to ${r.path}:\n\n${r.block}`);
      });
    });
}
