import { callerDepth } from '../core/caller-depth.js';
import { COMMANDS } from '../commands/index.js';
import type { CommandName } from '../commands/names.js';
import { runCommand, type CommandContext } from '../commands/table.js';
import { openEngine, startSchedulerService } from '../app.js';
import type { Engine } from '../engine.js';
import type { SchedulerService, SchedulerStatus } from '../scheduler/service-types.js';
import { waitTasks, type WaitResult } from '../scheduler/wait.js';
import type { EventRow } from '../store/events.js';
import { followEvents, type FollowOptions } from '../scheduler/follow.js';
import { methodName, type CommandMethods } from './methods.js';

export interface OpenOptions {
  /** The home folder; default: LIGHTWORKER_HOME, else the platform default (as the CLI). */
  home?: string;
  /**
   * Run the scheduler in this process (default true): lead when nobody else does, else stand by and take
   * over when the leader goes. With false this process only reads and writes; tasks run when another
   * process leads (`lightworker run`, `serve`, the desktop app).
   */
  lead?: boolean;
  /** How often to notice other processes' commits, in ms (default 25). */
  pollMs?: number;
}

export interface WaitOptions {
  /** Give up after this many ms (reason `timeout`); default: no limit. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** setTimeout's largest delay: "no limit" for a wait. */
const FOREVER_MS = 2 ** 31 - 1;

/**
 * LightWorker in-process: one open home with a typed method per command of the table (`delegateTask`,
 * `listTasks`, `approveTask`, …, inputs checked by the same zod schemas as every other face), plus
 * `wait`, `events` and `close`. Bad input and refused operations reject with an `AppError` (code + field).
 */
// The interface of the same name adds the generated command methods to the class's type.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class LightWorker {
  private closed = false;
  private readonly ctx: CommandContext;

  private constructor(
    private readonly engine: Engine,
    private readonly service: SchedulerService | null,
  ) {
    this.ctx = { engine, face: 'library', depth: callerDepth() };
  }

  /** Open a home (created on first use) and, unless `lead: false`, start its scheduler in this process. */
  static async open(opts: OpenOptions = {}): Promise<LightWorker> {
    const engine = openEngine({ home: opts.home, pollMs: opts.pollMs });
    try {
      const service = opts.lead === false ? null : await startSchedulerService(engine);
      return new LightWorker(engine, service);
    } catch (err) {
      engine.close();
      throw err;
    }
  }

  /** The home folder this instance opened. */
  get home(): string {
    return this.engine.home.root;
  }

  /** Whether this process leads the scheduler right now (null: opened with `lead: false`). */
  scheduler(): SchedulerStatus | null {
    return this.service?.status() ?? null;
  }

  /** Run a command of the table by name (what every typed method does). */
  async command(name: CommandName, input?: unknown): Promise<unknown> {
    if (this.closed) throw new Error('this LightWorker is closed');
    return runCommand(COMMANDS, this.ctx, name, input ?? {});
  }

  /**
   * Resolve when every named task has ended, or one needs a person (approval) — never hanging on an
   * approval. Unlike the `wait_tasks` command (≤ 55 s, for MCP clients), there is no limit by default.
   */
  wait(ids: string | string[], opts: WaitOptions = {}): Promise<WaitResult> {
    return waitTasks(this.engine, Array.isArray(ids) ? ids : [ids], Math.min(opts.timeoutMs ?? FOREVER_MS, FOREVER_MS), opts.signal);
  }

  /** The event log as an async iterator that follows live: `for await (const e of lw.events({ taskId })) …`. */
  events(opts: FollowOptions = {}): AsyncGenerator<EventRow, void, undefined> {
    return followEvents(this.engine, () => this.closed, opts);
  }

  /** Stop the scheduler (tasks this process runs are cancelled as `shutdown`), end followers, close the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.service?.stop();
    this.engine.events.emit('change'); // wakes followers, which see `closed` and finish
    this.engine.close();
  }
}

// Declaration merging: the class's type gains one typed method per command (see methods.ts).
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface LightWorker extends CommandMethods {}

for (const name of COMMANDS.keys()) {
  Object.defineProperty(LightWorker.prototype, methodName(name), {
    value(this: LightWorker, input?: unknown) {
      return this.command(name as CommandName, input);
    },
    writable: true,
    configurable: true,
  });
}
