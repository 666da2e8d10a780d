/** The part of Electron's `app` used for the single-instance lock (a fake in unit tests). */
export interface AppLockLike {
  requestSingleInstanceLock(): boolean;
  on(event: 'second-instance', fn: () => void): unknown;
  quit(): void;
}

/**
 * Hold the single-instance lock. A second launch quits at once and the first one is told (it shows its
 * window), so two desktop apps never run two schedulers' UIs against one home.
 */
export function claimSingleInstance(app: AppLockLike, onSecondLaunch: () => void): boolean {
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return false;
  }
  app.on('second-instance', onSecondLaunch);
  return true;
}
