/**
 * Hold SIGINT, SIGTERM and SIGHUP for the length of a short critical section (an accept between its ref
 * update and its last step), then let them take effect: a Ctrl-C lands after the section, not inside it.
 *
 * Only the default action is deferred. A process that listens to a signal itself (serve, run, the
 * desktop app) gets it as always, at once; we re-raise a held signal only when no one else listened,
 * which is when Node would have ended the process. Sections nest and overlap (one listener for all).
 */

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

let depth = 0;
let pending: NodeJS.Signals | null = null;
let arrived = 0;

function onSignal(sig: NodeJS.Signals): void {
  arrived++;
  if (process.listenerCount(sig) === 1 && !pending) pending = sig;
}

/**
 * Defer the default action of SIGINT/SIGTERM/SIGHUP until the returned function is called (once; later
 * calls do nothing). Call it in a `finally`.
 */
export function holdSignals(): () => void {
  if (depth++ === 0) for (const s of SIGNALS) process.on(s, onSignal);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--depth > 0) return;
    for (const s of SIGNALS) process.off(s, onSignal);
    const sig = pending;
    pending = null;
    // With our listener gone and no other, this ends the process as the signal would have.
    if (sig && process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  };
}

/** Run `fn` with the default action of SIGINT/SIGTERM/SIGHUP deferred until it has settled. */
export async function withSignalsHeld<T>(fn: () => Promise<T>): Promise<T> {
  const release = holdSignals();
  try {
    return await fn();
  } finally {
    release();
  }
}

/** How many signals arrived during held sections so far (a test hook waits for one). */
export function signalsArrived(): number {
  return arrived;
}
