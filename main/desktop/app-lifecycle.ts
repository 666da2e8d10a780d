/**
 * Platform lifecycle of the desktop app, apart from Electron so it is unit-tested with a fake `app`:
 * Windows AppUserModelId, macOS dock activation, staying alive in the tray with no window, and Electron
 * notifications kept referenced until they are done.
 */

/** electron-builder.yml's appId: Windows ties toasts (and their clicks) to the shortcut with this id. */
export const APP_USER_MODEL_ID = 'dev.lightworker.app';

/** The part of Electron's `app` used here. */
export interface AppLifecycleLike {
  on(event: 'activate' | 'window-all-closed', fn: () => void): unknown;
  setAppUserModelId(id: string): void;
}

export interface AppLifecycleDeps {
  platform?: NodeJS.Platform;
  /** Open (or re-create) and focus the console window. */
  showWindow(): void;
}

/**
 * - Windows: set the AppUserModelId before any notification, else toasts are dropped or attributed to
 *   electron.exe and their clicks never reach the app.
 * - macOS: clicking the Dock icon ('activate') with no window open re-opens the console.
 * - Closing every window keeps the app (and its scheduler) running in the tray.
 */
export function installAppLifecycle(app: AppLifecycleLike, deps: AppLifecycleDeps): void {
  const platform = deps.platform ?? process.platform;
  if (platform === 'win32') app.setAppUserModelId(APP_USER_MODEL_ID);
  app.on('activate', () => deps.showWindow());
  app.on('window-all-closed', () => undefined);
}

/** The part of Electron's `Notification` used here. */
export interface NotificationLike {
  on(event: 'click' | 'close' | 'failed', fn: () => void): unknown;
  show(): void;
}

/**
 * Shows notifications and keeps a reference to each until it is clicked, closed or failed. Electron's
 * Notification object is otherwise garbage-collected while still on screen, and a click on it then
 * does nothing. At most `max` are kept (the oldest are let go first), so a flood cannot grow memory.
 */
export function createNotificationKeeper(max = 50): { show(n: NotificationLike): void; readonly size: number } {
  const live = new Set<NotificationLike>();
  return {
    show(n) {
      live.add(n);
      const release = () => live.delete(n);
      n.on('click', release);
      n.on('close', release);
      n.on('failed', release);
      while (live.size > max) live.delete(live.values().next().value as NotificationLike);
      n.show();
    },
    get size() {
      return live.size;
    },
  };
}
