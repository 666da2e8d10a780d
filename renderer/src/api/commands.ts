// The console's view of the command table: the library's typed methods, addressed by command name
// (type-only imports; nothing from main/ is bundled into the renderer).
import type { CommandName } from '../../../main/commands/names.js';
import type { CommandMethods, MethodName } from '../../../main/lib/methods.js';

export type { CommandName };

/** The library's method for a command: its arguments and its result come from the command's own definition. */
type MethodOf<N extends CommandName> = CommandMethods[MethodName<N>];

/** What a command takes: `[input]`, or `[input?]` when `{}` is a valid input. */
export type CommandArgs<N extends CommandName> = Parameters<MethodOf<N>>;

/** What a command resolves to, as its handler returns it. */
export type CommandResult<N extends CommandName> = Awaited<ReturnType<MethodOf<N>>>;

/** Calls one command of the table by name: a misspelt name, a wrong input or a wrong use of the result does not compile. */
export type CallCommand = <N extends CommandName>(name: N, ...args: CommandArgs<N>) => Promise<CommandResult<N>>;

/** What the New form sends: one task (delegate_task) or a goal a planner splits (orchestrate_goal). */
export type TaskInput = CommandArgs<'delegate_task'>[0];
export type GoalInput = CommandArgs<'orchestrate_goal'>[0];
export type TeamInput = CommandArgs<'start_team'>[0];

/**
 * A typed `call` over a transport that sends a command by name and resolves to its `data`: the engine ran the
 * command's own handler, so its answer has the handler's type — the one place that type is taken on trust.
 */
export function typedCall(send: (name: string, input: unknown) => Promise<unknown>): CallCommand {
  return <N extends CommandName>(name: N, ...args: CommandArgs<N>) => send(name, args[0] ?? {}) as Promise<CommandResult<N>>;
}
