import type { RunningTask, SchedulerService } from './service.js';

/**
 * Exit codes of a shutdown: 0 when the running tasks were let finish (the work is done), else the
 * shell's 128 + signal number (SIGINT 130, SIGTERM 143), whether or not something was cancelled.
 */
export const EXIT_DRAINED = 0;
const EXIT_BY_SIGNAL: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };
const exitFor = (signal: NodeJS.Signals | undefined) => (signal ? (EXIT_BY_SIGNAL[signal] ?? 1) : 0);

/**
 * A terminal delivers one Ctrl-C to the whole foreground group, and `npm start` forwards it again:
 * signals this close together are one keypress, not the "second Ctrl-C" that cancels work.
 */
export const SAME_SIGNAL_MS = 500;

export interface GracefulShutdownOptions {
  svc: SchedulerService;
  /** One line for the person at the terminal (stderr; never stdout, the MCP channel). */
  say: (line: string) => void;
  /** Cancel what still runs this long after the first signal; null/undefined waits until it ends. */
  drainTimeoutMs?: number | null;
  /** Called once, after the service stopped, with the exit code to use. */
  onStopped: (code: number) => void;
  /** A fourth signal: leave without waiting for anything (default process.exit). */
  exitNow?: (code: number) => void;
  /** Listen to these process signals (default SIGINT and SIGTERM); [] for a face that has its own trigger. */
  signals?: NodeJS.Signals[];
}

export interface GracefulShutdown {
  /** What a signal does (also callable without one, e.g. from a quit menu): drain, then cancel, then kill. */
  request(signal?: NodeJS.Signals): void;
  /** Stop listening to the signals. */
  dispose(): void;
}

/** `01J… "fix the login" (codex)`, short enough for one line per task. */
export function describeTask(t: RunningTask): string {
  const name = t.name.length > 48 ? `${t.name.slice(0, 47)}…` : t.name;
  return `${t.id} "${name}" (${t.worker})`;
}

export function countTasks(n: number): string {
  return `${n} task${n === 1 ? '' : 's'}`;
}

/** The lines that list running tasks: at most five, then a count of the rest. */
export function listTasks(tasks: RunningTask[]): string[] {
  const lines = tasks.slice(0, 5).map((t) => `  ${describeTask(t)}`);
  if (tasks.length > 5) lines.push(`  … and ${tasks.length - 5} more`);
  return lines;
}

/**
 * The one graceful shutdown of every leading face (`run`, `serve`, the desktop app). First signal: claim
 * nothing new and let running tasks finish (saying which, and how to cancel them); exit 0 once they
 * have. Second signal (or the drain timeout): cancel them — their trees are killed, they end `cancelled`
 * with code `shutdown` and can be continued with `retry --strategy resume`. Third: SIGKILL at once.
 * Fourth: exit without waiting.
 * With nothing running, the first signal stops at once.
 */
export function installGracefulShutdown(opts: GracefulShutdownOptions): GracefulShutdown {
  const { svc, say } = opts;
  const signals = opts.signals ?? ['SIGINT', 'SIGTERM'];
  let stage = 0;
  let lastAt = 0;
  let drainTimer: NodeJS.Timeout | null = null;
  let cancelled: RunningTask[] = [];
  let done = false;

  const finish = (code: number) => {
    if (done) return;
    done = true;
    if (drainTimer) clearTimeout(drainTimer);
    svc.off('drained', onDrained);
    svc.off('task.ended', onEnded);
    opts.onStopped(code);
  };
  const onDrained = () => {
    if (stage !== 1) return;
    say('nothing runs any more; stopping');
    void svc.stop().then(() => finish(EXIT_DRAINED));
  };
  const onEnded = (id: string, status: string) => {
    if (stage !== 1) return;
    const left = svc.runningTasks().length;
    if (left > 0) say(`task ${id} ended ${status}; ${countTasks(left)} still running`);
  };

  const cancel = (signal: NodeJS.Signals | undefined, why: string) => {
    stage = 2;
    if (drainTimer) clearTimeout(drainTimer);
    cancelled = svc.runningTasks();
    say(`${why}: cancelling ${countTasks(cancelled.length)} (their process trees are killed; ${signal ? 'Ctrl-C again' : 'ask again'} to kill at once) …`);
    void svc.stop().then(() => {
      if (cancelled.length) {
        say(`stopped by the shutdown: ${cancelled.map((t) => t.id).join(', ')}`);
        say(`continue ${cancelled.length === 1 ? `it later with: lightworker retry ${cancelled[0].id}` : 'each later with: lightworker retry <id>'} --strategy resume`);
      }
      finish(exitFor(signal));
    });
  };

  const request = (signal?: NodeJS.Signals) => {
    const now = Date.now();
    if (stage > 0 && now - lastAt < SAME_SIGNAL_MS) return;
    lastAt = now;
    if (stage === 0) {
      stage = 1;
      const running = svc.runningTasks();
      if (running.length === 0) {
        void svc.stop().then(() => finish(exitFor(signal)));
        return;
      }
      svc.on('task.ended', onEnded);
      svc.on('drained', onDrained);
      const n = running.length;
      const it = n === 1 ? 'it' : 'them';
      say(`shutting down: ${countTasks(n)} running; claiming nothing new and waiting for ${it} to finish:`);
      for (const line of listTasks(running)) say(line);
      const timeoutS = opts.drainTimeoutMs ? Math.round(opts.drainTimeoutMs / 1000) : null;
      say(`${signal ? 'Ctrl-C again' : 'Quit again'} to cancel ${it} now${timeoutS !== null ? `; ${it} will be cancelled in ${timeoutS} s otherwise` : ''} (a cancelled task can be continued with \`lightworker retry <id> --strategy resume\`).`);
      if (opts.drainTimeoutMs) {
        drainTimer = setTimeout(() => cancel(signal, `--drain-timeout ${timeoutS} s reached`), opts.drainTimeoutMs);
        drainTimer.unref();
      }
      svc.drain();
      return;
    }
    if (stage === 1) {
      cancel(signal, 'second signal');
      return;
    }
    if (stage === 2) {
      stage = 3;
      say(`killing the remaining process trees at once (${signal ? 'Ctrl-C again' : 'ask again'} to exit without waiting)`);
      void svc.stop({ killNow: true });
      return;
    }
    say('exiting now; tasks left running here are marked orphaned by the next leader');
    (opts.exitNow ?? ((code) => process.exit(code)))(exitFor(signal));
  };

  const handlers = signals.map((sig) => {
    const h = () => request(sig);
    process.on(sig, h);
    return [sig, h] as const;
  });
  return {
    request,
    dispose: () => {
      for (const [sig, h] of handlers) process.off(sig, h);
    },
  };
}
