// The desktop app's main process: the only module tree that imports 'electron'. Logic lives in the
// plain modules beside it (tray-state, tray-menu, notifier, ipc, sender-check, single-instance).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { app, BrowserWindow, clipboard, dialog, ipcMain, Menu, nativeImage, Notification, powerMonitor, Tray } from 'electron';
import { COMMANDS } from '../commands/index.js';
import { runCommand } from '../commands/table.js';
import type { Engine } from '../engine.js';
import { openEngine, startSchedulerService, type SchedulerService } from '../app.js';
import { findPackageRoot } from '../http/static.js';
import { installGracefulShutdown } from '../scheduler/shutdown.js';
import { requireTask } from '../store/tasks.js';
import { createNotificationKeeper, installAppLifecycle } from './app-lifecycle.js';
import { registerIpcHandlers } from './ipc.js';
import { adoptLoginShellPath } from './login-path.js';
import { electronSqliteBinding } from './native-binding.js';
import { createNotifier } from './notifier.js';
import { createQuitGuard } from './quit-guard.js';
import { claimSingleInstance } from './single-instance.js';
import { buildTrayMenu } from './tray-menu.js';
import { computeTrayState } from './tray-state.js';
import { createConsoleWindow, lockDownSession, rendererUrlFor, resourcePath } from './window.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = findPackageRoot(here);
// electron-vite puts main in out/main, preload in out/preload, the renderer in out/renderer.
const indexHtml = join(root, 'out', 'renderer', 'index.html');
const preload = join(root, 'out', 'preload', 'index.cjs');
const res = (name: string) => resourcePath(root, app.isPackaged, process.resourcesPath, name);

let quitting = false;
let win: BrowserWindow | null = null;
let tray: Tray | null = null;
let engine: Engine;
let scheduler: SchedulerService;
/** What keeps the scheduler from working (its store unreachable, or stopped), shown in the tray; null when fine. */
let trouble: string | null = null;
/** Notifications stay referenced until done: a collected one ignores its click. */
const notifications = createNotificationKeeper();
/** Set once the OS shuts down or logs out: quitting then asks nothing. */
let onOsShutdown: () => void = () => undefined;

function notify(opts: { title: string; body: string; silent: boolean }, onClick?: () => void): void {
  if (!Notification.isSupported()) return;
  const note = new Notification(opts);
  if (onClick) note.on('click', onClick);
  notifications.show(note);
}

function show(hash?: string): void {
  if (!win || win.isDestroyed()) {
    win = createConsoleWindow({ preload, indexHtml, icon: res('icon.png'), isQuitting: () => quitting });
    win.on('session-end', () => onOsShutdown()); // Windows logoff / shutdown
  }
  if (hash) {
    const send = () => win?.webContents.send('lw:navigate', hash);
    if (win.webContents.isLoading()) win.webContents.once('did-finish-load', send);
    else send();
  }
  win.show();
  win.focus();
}

function refreshTray(): void {
  if (!tray) return;
  let s: ReturnType<SchedulerService['status']> | null = null;
  try {
    s = scheduler.status();
  } catch {
    // the store cannot be read now: the tray shows the trouble the scheduler reported
  }
  const state = computeTrayState(s, trouble);
  tray.setImage(nativeImage.createFromPath(res(`tray-${state.icon}.png`)));
  tray.setToolTip(state.tooltip);
  const menu = buildTrayMenu(state, s?.paused ?? false, s?.awaitingApproval ?? 0, {
    openConsole: () => show('#/tasks'),
    openApprovals: () => show('#/inbox'),
    togglePause: () => {
      if (scheduler.status().paused) scheduler.resume();
      else scheduler.pause();
      refreshTray();
    },
    runDoctor: () => show('#/doctor'),
    copyMcpConfig: () => void copyMcpConfig(),
    quit: () => app.quit(),
  });
  tray.setContextMenu(Menu.buildFromTemplate(menu));
}

async function copyMcpConfig(): Promise<void> {
  try {
    const data = (await runCommand(COMMANDS, { engine, face: 'ipc', depth: 0 }, 'mcp_config', { client: 'json' })) as unknown;
    const text = typeof data === 'string' ? data : typeof (data as { text?: unknown })?.text === 'string' ? (data as { text: string }).text : JSON.stringify(data, null, 2);
    clipboard.writeText(text);
    notify({ title: 'LightWorker', body: 'MCP configuration copied', silent: true });
  } catch (err) {
    notify({ title: 'LightWorker', body: `Could not copy the MCP configuration: ${(err as Error).message}`, silent: true });
  }
}

async function start(): Promise<void> {
  // Before anything spawns a worker: from the Dock or a launcher, PATH lacks what the shell profile adds.
  const path = await adoptLoginShellPath();
  if (path.outcome !== 'skipped') process.stderr.write(`lightworker: PATH from the login shell: ${path.detail}\n`);
  engine = openEngine({ nativeBinding: electronSqliteBinding() });
  engine.watch();
  scheduler = await startSchedulerService(engine);
  lockDownSession();
  registerIpcHandlers(ipcMain, engine, () => rendererUrlFor(indexHtml));

  const notifier = createNotifier({
    settings: () => engine.config.notifications,
    taskName: (id) => {
      try {
        return requireTask(engine.db, id).name;
      } catch {
        return null;
      }
    },
    show: (n) => notify({ title: n.title, body: n.body, silent: n.silent }, () => show(n.route)),
  });
  engine.events.on('event', (e) => {
    notifier.onEvent(e);
    if (win && !win.isDestroyed()) win.webContents.send('lw:event', e);
  });

  tray = new Tray(nativeImage.createFromPath(res('tray-idle.png')));
  tray.on('click', () => show());
  scheduler.on('status', () => refreshTray());
  // A scheduler that cannot work says so in the tray, as `run` and `serve` do on stderr.
  scheduler.on('trouble', (message: string) => {
    trouble = `cannot schedule: ${message}; retrying`;
    refreshTray();
  });
  scheduler.on('recovered', () => {
    trouble = null;
    refreshTray();
  });
  // The service has stopped itself, killing what ran.
  scheduler.once('fatal', (e: Error) => {
    trouble = `stopped scheduling: ${e.message}; restart LightWorker once the store answers`;
    refreshTray();
  });
  refreshTray();
  show('#/tasks');

  // Quitting with running work asks first: stop them, keep running in the tray, or cancel.
  const guard = createQuitGuard({
    dialog,
    running: () => scheduler.runningTasks(),
    keepInTray: () => {
      for (const w of BrowserWindow.getAllWindows()) w.close();
    },
    quit: () => app.quit(),
  });
  onOsShutdown = () => guard.allowWithoutAsking();
  powerMonitor.on('shutdown', () => onOsShutdown()); // macOS and Linux
  app.on('before-quit', (e) => {
    guard.beforeQuit(e);
    if (guard.confirmed) quitting = true;
  });
  const exitApp = (code: number) => {
    if (!engine) return;
    notifier.dispose();
    void scheduler.stop().finally(() => {
      engine.close();
      engine = undefined as unknown as Engine;
      app.exit(code);
    });
  };
  app.on('will-quit', (e) => {
    if (!engine) return;
    e.preventDefault();
    exitApp(0);
  });
  // Ctrl-C in the terminal that started the app (`npm start`): the same graceful shutdown as `run`/`serve`.
  installGracefulShutdown({ svc: scheduler, say: (line) => process.stderr.write(`lightworker: ${line}\n`), onStopped: (code) => exitApp(code), exitNow: (code) => app.exit(code) });
}

if (claimSingleInstance(app, () => show())) {
  // Dock activation re-opens the console once the engine is up; no window left keeps the tray.
  installAppLifecycle(app, { showWindow: () => engine && show() });
  app.whenReady().then(start).catch((err) => {
    process.stderr.write(`lightworker desktop failed to start: ${(err as Error).stack ?? err}\n`);
    app.exit(1);
  });
}
