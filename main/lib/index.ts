/**
 * `import { LightWorker } from 'lightworker'`: the engine in-process, with one typed method per command.
 * See docs/library.md.
 */
export { LightWorker, type OpenOptions, type WaitOptions } from './lightworker.js';
export { methodName, type CommandMethods, type MethodName } from './methods.js';
export type { FollowOptions } from '../scheduler/follow.js';
export { AppError, ERROR_CODES, isAppError, type ErrorCode } from '../core/errors.js';
export { COMMAND_NAMES, type CommandName } from '../commands/names.js';
export type { EventRow } from '../store/events.js';
export type { Task, TaskStatus } from '../tasks/types.js';
export type { WaitResult } from '../scheduler/wait.js';
export type { SchedulerStatus } from '../scheduler/service.js';
