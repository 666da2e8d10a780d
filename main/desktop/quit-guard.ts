import type { RunningTask } from '../scheduler/service.js';
import { countTasks, listTasks } from '../scheduler/shutdown.js';

/** The part of Electron's `dialog` the guard uses (a fake in tests). */
export interface MessageBoxLike {
  showMessageBox(opts: {
    type: 'question';
    title: string;
    message: string;
    detail: string;
    buttons: string[];
    defaultId: number;
    cancelId: number;
    noLink: boolean;
  }): Promise<{ response: number }>;
}

export type QuitChoice = 'quit' | 'tray' | 'cancel';
const CHOICES: QuitChoice[] = ['quit', 'tray', 'cancel'];

/**
 * Ask before quitting with running work. Nothing running: 'quit' without asking. Otherwise the person
 * picks: quit and stop them (cancelled as stopped by a shutdown, resumable), keep the app running in the
 * tray, or cancel. Closing the box counts as cancel.
 */
export async function confirmQuit(dialog: MessageBoxLike, running: RunningTask[]): Promise<QuitChoice> {
  if (running.length === 0) return 'quit';
  const n = running.length;
  const { response } = await dialog.showMessageBox({
    type: 'question',
    title: 'LightWorker',
    message: `${countTasks(n)} ${n === 1 ? 'is' : 'are'} running.`,
    detail: `${listTasks(running).map((l) => l.trim()).join('\n')}\n\nQuitting stops ${n === 1 ? 'it' : 'them'} (a stopped task can be continued later: lightworker retry <id> --strategy resume). In the tray, LightWorker keeps running ${n === 1 ? 'it' : 'them'}.`,
    buttons: ['Quit and stop them', 'Keep running in tray', 'Cancel'],
    defaultId: 1,
    cancelId: 2,
    noLink: true,
  });
  return CHOICES[response] ?? 'cancel';
}

export interface QuitGuardDeps {
  dialog: MessageBoxLike;
  running: () => RunningTask[];
  /** Close the windows; the app and its scheduler stay in the tray. */
  keepInTray: () => void;
  /** Quit for real (app.quit(): before-quit fires again and is let through). */
  quit: () => void;
}

/**
 * The desktop app's `before-quit` handler: prevents the quit while asking, then quits, goes to the tray
 * or does nothing. A quit the person confirmed (or one with nothing running) goes through.
 */
export function createQuitGuard(deps: QuitGuardDeps): { beforeQuit(e: { preventDefault(): void }): void; allowWithoutAsking(): void; readonly confirmed: boolean } {
  let confirmed = false;
  let asking = false;
  return {
    get confirmed() {
      return confirmed;
    },
    /**
     * The OS is shutting down or logging out: a dialog would only hold that up (and the OS would kill the
     * app anyway), so the next quit stops running tasks as a shutdown (resumable) without asking.
     */
    allowWithoutAsking() {
      confirmed = true;
    },
    beforeQuit(e) {
      if (confirmed) return;
      const running = deps.running();
      if (running.length === 0) {
        confirmed = true;
        return;
      }
      e.preventDefault();
      if (asking) return;
      asking = true;
      void confirmQuit(deps.dialog, running)
        .then((choice) => {
          if (choice === 'quit') {
            confirmed = true;
            deps.quit();
          } else if (choice === 'tray') deps.keepInTray();
        })
        .finally(() => {
          asking = false;
        });
    },
  };
}
