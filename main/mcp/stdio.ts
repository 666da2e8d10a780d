import { openEngine, startDelegatingService, startSchedulerService, type SchedulerService } from '../app.js';
import type { Engine } from '../engine.js';
import { createServer, depthFromEnv } from './server.js';
import { LineTransport } from './stdio-transport.js';
import { toolSetFromEnv } from './tools.js';

/**
 * How long one store call of an MCP server waits for the write lock, blocking the process. Short: a busy
 * command is tried again after a random pause (runCommand, up to BUSY_RETRY_MS), with the event loop free
 * meanwhile, so a hundred sessions queueing their writes leave the lock to the leader's heartbeats more often
 * than a hundred threads polling in SQLite's busy handler would.
 */
const MCP_BUSY_TIMEOUT_MS = 500;

export interface StdioOptions {
  home?: string;
}

function logErr(line: string): void {
  process.stderr.write(line.endsWith('\n') ? line : line + '\n');
}

/**
 * `lightworker mcp`: serve MCP on stdin/stdout until stdin ends or a signal arrives. The transport is
 * connected before anything slow (clients such as `claude -p` do not wait for servers); the scheduler
 * service starts right after and leads or stands by. Stdout carries protocol only.
 */
export async function runStdioServer(opts: StdioOptions = {}): Promise<void> {
  guardStdout();
  const engine = openEngine({ home: opts.home, busyTimeoutMs: MCP_BUSY_TIMEOUT_MS });
  engine.watch();
  const server = createServer(engine, { depth: depthFromEnv(), toolSet: toolSetFromEnv() });
  const transport = new LineTransport(process.stdin, process.stdout);

  let scheduler: SchedulerService | null = null;
  let stopping: Promise<void> | null = null;
  const shutdown = (why: string, code = 0): Promise<void> => {
    stopping ??= (async () => {
      if (process.env.LIGHTWORKER_DEBUG) logErr(`lightworker mcp: shutting down (${why})`);
      // Whatever happens below, the process ends: a stuck worker kill must not keep a client waiting.
      setTimeout(() => process.exit(code), 15_000).unref();
      try {
        await scheduler?.stop();
      } catch (e) {
        logErr(`lightworker mcp: scheduler stop failed: ${(e as Error).message}`);
      }
      await server.close().catch(() => undefined);
      engine.close();
      process.exitCode = code;
      // stdin may still hold the event loop open (Codex closes it only after the signal).
      process.exit(code);
    })();
    return stopping;
  };

  transport.onclose = () => void shutdown('stdin closed');
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => void shutdown(sig));
  process.on('uncaughtException', (e) => logErr(`lightworker mcp: uncaught: ${e.stack ?? e.message}`));
  process.on('unhandledRejection', (e) => logErr(`lightworker mcp: unhandled rejection: ${(e as Error)?.stack ?? String(e)}`));

  await server.connect(transport);
  // After connecting: initialize and tools/list are answered while the scheduler starts.
  setImmediate(() => {
    void startScheduler(engine).then((s) => {
      if (stopping) void s?.stop();
      else scheduler = s;
    });
  });
  await new Promise<void>(() => undefined);
}

/**
 * The scheduler for this session. An MCP server lives only as long as its client's session (`claude -p`
 * ends it, and its running tasks with it), so by default it never leads itself: when nobody leads and
 * there is work, it starts a detached `lightworker run --until-idle` that outlives the session.
 * LIGHTWORKER_MCP_SCHEDULER=inprocess makes this process lead instead (it then cancels its running
 * tasks when the session ends).
 */
async function startScheduler(engine: Engine): Promise<SchedulerService | null> {
  try {
    // Started after the transport is up: initialize and tools/list need none of the runner's modules.
    if (process.env.LIGHTWORKER_MCP_SCHEDULER === 'inprocess') return await startSchedulerService(engine);
    return await startDelegatingService(engine);
  } catch (e) {
    logErr(`lightworker mcp: scheduler not started (tasks are queued but run only where a scheduler leads): ${(e as Error).message}`);
    return null;
  }
}

/** Stdout is the protocol channel: send stray console output to stderr instead. */
function guardStdout(): void {
  const toErr = (...args: unknown[]) => logErr(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
  // Replace (not call) the stdout-writing console methods.
  Object.assign(console, { log: toErr, info: toErr, debug: toErr });
}
