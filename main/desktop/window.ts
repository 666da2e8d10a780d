import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BrowserWindow, session, shell } from 'electron';

export interface ConsoleWindowOptions {
  preload: string;
  /** out/renderer/index.html */
  indexHtml: string;
  icon?: string;
  /** When true, closing really closes (quitting); otherwise it only hides to the tray. */
  isQuitting: () => boolean;
}

/** The renderer's URL as the sender check compares it. */
export function rendererUrlFor(indexHtml: string): string {
  return pathToFileURL(indexHtml).href;
}

/** No remote content at all: every http(s)/ws request from the window's session is cancelled. */
export function lockDownSession(): void {
  const ses = session.defaultSession;
  ses.webRequest.onBeforeRequest({ urls: ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*'] }, (_d, cb) => cb({ cancel: true }));
  ses.setPermissionRequestHandler((_wc, permission, cb) => cb(permission === 'clipboard-sanitized-write'));
}

/**
 * The console window: contextIsolation, sandbox, no nodeIntegration, CSP from the page's meta tag, no
 * navigation away from the page, no new windows (links open in the system browser). Closing hides it.
 */
export function createConsoleWindow(o: ConsoleWindowOptions): BrowserWindow {
  const win = new BrowserWindow({
    width: 1280,
    height: 840,
    show: false,
    title: 'LightWorker',
    icon: o.icon,
    webPreferences: {
      preload: o.preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  const ours = rendererUrlFor(o.indexHtml);
  win.webContents.on('will-navigate', (e, url) => {
    if (!url.startsWith(ours)) e.preventDefault();
  });
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.on('close', (e) => {
    if (!o.isQuitting()) {
      e.preventDefault();
      win.hide();
    }
  });
  win.once('ready-to-show', () => win.show());
  void win.loadFile(o.indexHtml);
  return win;
}

export function resourcePath(root: string, packaged: boolean, resourcesPath: string, name: string): string {
  return packaged ? join(resourcesPath, 'resources', name) : join(root, 'resources', name);
}
