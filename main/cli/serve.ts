import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { openEngine, startSchedulerService } from '../app.js';
import { AppError } from '../core/errors.js';
import { newSecret } from '../http/auth.js';
import { requireLoopbackHost } from '../http/security.js';
import { startConsoleServer } from '../http/server.js';
import { findPackageRoot, rendererDir } from '../http/static.js';
import { installGracefulShutdown } from '../scheduler/shutdown.js';
import { globals } from './context.js';
import { openBrowser } from './open-browser.js';
import { err, out } from './output.js';
import { sayTrouble, seconds } from './scheduler.js';

/** Build the renderer with vite when a checkout has no out/renderer yet (vite is a dev dependency). */
async function ensureRenderer(dir: string): Promise<void> {
  if (existsSync(join(dir, 'index.html'))) return;
  const root = findPackageRoot();
  const config = join(root, 'renderer', 'vite.config.ts');
  if (!existsSync(config)) throw new AppError('unavailable', `the console is not built (${dir} missing) and no renderer sources here; run \`npm run build:renderer\``);
  err(`building the console into ${dir} (first run) …`);
  try {
    const vite = (await import('vite')) as typeof import('vite');
    await vite.build({ configFile: config, logLevel: 'warn' });
  } catch (e) {
    throw new AppError('unavailable', `could not build the console: ${(e as Error).message}; run \`npm run build:renderer\` and retry`);
  }
  if (!existsSync(join(dir, 'index.html'))) throw new AppError('unavailable', `the console build did not produce ${dir}/index.html; run \`npm run build:renderer\``);
}

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new AppError('invalid_input', `--port: expected 0–65535, got "${v}"`, { field: 'port' });
  return n;
}

/** `lightworker serve`: the console over loopback HTTP, with the scheduler running in this process. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the console on loopback HTTP (127.0.0.1 or ::1) and run the scheduler')
    .option('--host <address>', 'literal loopback address: 127.0.0.1 or ::1', '127.0.0.1')
    .option('--port <n>', 'TCP port (0 picks a free one)', parsePort, 8766)
    .option('--no-open', 'do not open a browser')
    .option('--paused', 'start with the scheduler paused')
    .option('--drain-timeout <seconds>', 'after a first Ctrl-C/SIGTERM, cancel running tasks after this long (default: wait until they end)', seconds('drain-timeout'))
    .action(async (o: { host: string; port: number; open: boolean; paused?: boolean; drainTimeout?: number }, cmd: Command) => {
      const host = requireLoopbackHost(o.host);
      const dir = rendererDir();
      await ensureRenderer(dir);
      const engine = openEngine({ home: globals(cmd).home });
      engine.watch();
      let server: Awaited<ReturnType<typeof startConsoleServer>> | undefined;
      let scheduler: Awaited<ReturnType<typeof startSchedulerService>> | undefined;
      try {
        server = await startConsoleServer({ engine, host, port: o.port, token: newSecret(), rendererDir: dir });
        scheduler = await startSchedulerService(engine, { paused: o.paused });
      } catch (e) {
        await server?.close();
        engine.close();
        throw e;
      }
      // The tokened URL is the only way in: print it (only this user's terminal sees it) and open it.
      out(`LightWorker console: ${server.loginUrl}`);
      err(`listening on ${server.host} port ${server.port}; home ${engine.home.root}; scheduler ${scheduler.status().role}${o.paused ? ' (paused)' : ''}; Ctrl-C stops (running tasks finish first; a second Ctrl-C cancels them)`);
      if (o.open) openBrowser(server.loginUrl, engine.home.root);
      const svc = scheduler;
      const code = await new Promise<number>((done) => {
        const stopped = (c: number) => {
          shutdown.dispose();
          done(c);
        };
        const shutdown = installGracefulShutdown({ svc, say: err, drainTimeoutMs: o.drainTimeout !== undefined ? o.drainTimeout * 1000 : null, onStopped: stopped });
        sayTrouble(svc, err, 'lightworker serve', () => stopped(1));
      });
      err('stopping …');
      await server.close();
      engine.close();
      process.exitCode = code;
    });
}
