import type { z } from 'zod';
import type { AnyCommand } from '../commands/index.js';
import type { CommandName } from '../commands/names.js';

/** `delegate_task` → `delegateTask`, at the type level. */
export type MethodName<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<MethodName<Tail>>}` : S;

/** `delegate_task` → `delegateTask`: the library's method for a command of the table. */
export function methodName<S extends string>(command: S): MethodName<S> {
  return command.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) as MethodName<S>;
}

/** The arguments of a command's method: its zod schema's input, optional when `{}` is a valid input (`Record<never, never>` is `{}`; `object` would not fit a strict empty schema's `Record<string, never>`). */
type MethodArgs<C extends AnyCommand> = Record<never, never> extends z.input<C['input']> ? [input?: z.input<C['input']>] : [input: z.input<C['input']>];

/**
 * One method per command of the table, named and typed from the command's own definition (literal name,
 * zod input schema, handler result): nothing here is written per command.
 */
export type CommandMethods = {
  [C in AnyCommand as MethodName<C['name']>]: (...args: MethodArgs<C>) => Promise<Awaited<ReturnType<C['handler']>>>;
};

/** Compile-time check: every name of the literal command list (what the preload exposes) has a method. */
type MissingMethods = Exclude<MethodName<CommandName>, keyof CommandMethods>;
export const EVERY_COMMAND_HAS_A_METHOD: [MissingMethods] extends [never] ? true : MissingMethods = true;
