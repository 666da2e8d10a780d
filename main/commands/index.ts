import type { CommandDef } from './table.js';
import { CACHELAB_COMMANDS } from './cachelab.js';
import { DATA_COMMANDS } from './data.js';
import { runDoctor } from './doctor.js';
import { EVENT_COMMANDS } from './events.js';
import { FLEET_COMMANDS } from './fleet.js';
import { ISOLATION_COMMANDS } from './isolation.js';
import { PULL_COMMANDS } from './pulls.js';
import { mcpConfigCommand } from './mcp-config.js';
import { ORCHESTRATION_COMMANDS } from './orchestration.js';
import { SETTINGS_COMMANDS } from './settings.js';
import { SCHEDULER_COMMANDS } from './scheduler.js';
import { TASK_COMMANDS } from './tasks.js';
import { CONVERSATION_COMMANDS } from './conversation.js';
import { REQUEST_COMMANDS } from './requests.js';
import { TEAM_COMMANDS } from './teams.js';
import { WORKER_COMMANDS } from './workers.js';

/** Every command with its own types (literal name, zod input, handler output): the library's methods come from it. */
export const COMMAND_LIST = [...TASK_COMMANDS, ...SCHEDULER_COMMANDS, ...EVENT_COMMANDS, runDoctor, ...SETTINGS_COMMANDS, ...ORCHESTRATION_COMMANDS, ...ISOLATION_COMMANDS, ...PULL_COMMANDS, mcpConfigCommand, ...WORKER_COMMANDS, ...CACHELAB_COMMANDS, ...CONVERSATION_COMMANDS, ...REQUEST_COMMANDS, ...TEAM_COMMANDS, ...FLEET_COMMANDS, ...DATA_COMMANDS] as const;

/** One entry of the table, as a union over every command's own type. */
export type AnyCommand = (typeof COMMAND_LIST)[number];

/** The one table of operations: IPC, HTTP, MCP, the CLI and the library all dispatch through it. */
export const COMMANDS: ReadonlyMap<string, CommandDef> = new Map((COMMAND_LIST as readonly CommandDef[]).map((c) => [c.name, c]));

export const COMMAND_NAMES = [...COMMANDS.keys()];
