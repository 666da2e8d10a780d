import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { isAppError, toErrorPayload } from '../core/errors.js';
import { err } from './output.js';
import { COMMAND_NAMES } from '../commands/names.js';
import { registerSystemCommands } from './system.js';
import { registerDataCommands } from './data.js';
import { registerTaskCommands } from './tasks.js';
import { registerIsolationCommands } from './isolation.js';
import { registerSchedulerCommands } from './scheduler.js';
import { registerServeCommand } from './serve.js';
import { findPackageRoot } from '../http/static.js';
import { registerMcpCommands } from './mcp.js';
import { registerTeamCommands } from './teams.js';
import { registerGatewayCommands, registerWorkerCommands } from './workers.js';
import { registerCachelabCommands } from './cachelab.js';
import { registerConversationCommands } from './conversation.js';
import { registerPullCommands } from './pulls.js';
import { registerSettingsCommands } from './settings.js';
import { registerFleetCommand } from './fleet.js';

/** The version in package.json: the one number `npm pack` and bin/lightworker.js's fast `--version` use too. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(findPackageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** Exit codes: 0 ok, 1 the operation failed, 2 bad usage or input. */
const USAGE_CODES = new Set(['invalid_input', 'not_found']);

/**
 * A user typed `lightworker show X`, not `get_task`: drop the internal command name an error starts with
 * (`get_task: id: …` → `id: …`, `retry_task: delegation depth exceeded` → `delegation depth exceeded`),
 * keeping the field it names.
 */
export function withoutCommandName(message: string): string {
  const m = /^([a-z_]+): /.exec(message);
  return m && (COMMAND_NAMES as readonly string[]).includes(m[1]) ? message.slice(m[0].length) : message;
}

export function buildProgram(): Command {
  const program = new Command('lightworker')
    .description('LightWorker: hand bounded coding tasks to agent CLIs, safely.')
    .version(packageVersion())
    .option('--home <dir>', 'home folder (default: $LIGHTWORKER_HOME or the platform state folder)')
    .showHelpAfterError()
    .exitOverride();
  registerSystemCommands(program);
  registerDataCommands(program);
  registerTaskCommands(program);
  registerIsolationCommands(program);
  registerSchedulerCommands(program);
  registerServeCommand(program);
  registerMcpCommands(program);
  registerWorkerCommands(program);
  registerGatewayCommands(program);
  registerCachelabCommands(program);
  registerTeamCommands(program);
  registerConversationCommands(program);
  registerPullCommands(program);
  registerSettingsCommands(program);
  registerFleetCommand(program);
  for (const c of program.commands) c.exitOverride();
  // A mistyped command gets the "did you mean" line and the usage line, not forty lines of help; the
  // subcommands (which inherited the full help above) still show their own help after a bad option.
  program.showHelpAfterError(`Usage: lightworker ${program.usage()}   (\`lightworker help\` lists the commands)`);
  return program;
}

/** Hooks that later parts (scheduler, workers, MCP, serve) use to add their commands. */
const extensions: ((program: Command) => void)[] = [];
export function extendCli(fn: (program: Command) => void): void {
  extensions.push(fn);
}

export async function main(argv: string[]): Promise<void> {
  // `lightworker events | head` closes our stdout early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  try {
    if (argv.length === 3 && argv[2] === 'mcp') {
      // How MCP clients start a server (mcp-config's launch line): served without building the whole
      // program first (commander and every command's options, ~10 ms of each server's start-up).
      const { runStdioServer } = await import('../mcp/stdio.js');
      await runStdioServer({});
      return;
    }
    const program = buildProgram();
    for (const ext of extensions) ext(program);
    for (const c of program.commands) c.exitOverride();
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') process.exitCode = 0;
      else process.exitCode = 2;
      return;
    }
    const p = toErrorPayload(e);
    err(`error: ${withoutCommandName(p.message)}${isAppError(e) ? ` [${p.code}]` : ''}`);
    if (!isAppError(e) && process.env.LIGHTWORKER_DEBUG) err((e as Error).stack ?? '');
    process.exitCode = isAppError(e) && USAGE_CODES.has(e.code) ? 2 : 1;
  }
}
