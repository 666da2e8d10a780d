import { statSync } from 'node:fs';
import { loadConfig, type Config } from './config.js';

export interface ConfigWatchHandlers {
  /** The file changed and is valid: the new configuration. */
  onChange(config: Config): void;
  /** The file changed and is not valid: the old configuration stays in force. */
  onInvalid(error: Error): void;
}

/** What identifies one version of the file cheaply: inode (an atomic rename swaps it), mtime and size. */
function fingerprint(path: string): string {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.ino}:${s.mtimeNs}:${s.size}`;
  } catch {
    return 'missing';
  }
}

/** A running watch of config.toml. */
export interface ConfigWatch {
  /**
   * Look now, synchronously (one stat when nothing changed): a caller about to act on the settings (a
   * task about to run) must not act on a version another process replaced a moment ago. With
   * `submittedAt` (ms), no stat when a look began after it: that look saw every version written before.
   */
  check(submittedAt?: number): void;
  stop(): void;
}

/**
 * Watch `config.toml` by polling its stat every `intervalMs` (no fs.watch: it misses atomic renames on
 * some platforms and holds a descriptor per process). A change is validated before it is applied; an
 * invalid version is reported only once it has stood for a poll (an editor that writes in two steps is
 * not reported mid-save). The timer is unref'd.
 */
export function watchConfigFile(path: string, handlers: ConfigWatchHandlers, intervalMs = 500): ConfigWatch {
  let lookedAt = Date.now();
  let seen = fingerprint(path);
  let invalid: Error | null = null;
  const look = (): void => {
    lookedAt = Date.now();
    const now = fingerprint(path);
    if (now === seen) {
      if (invalid) handlers.onInvalid(invalid);
      invalid = null;
      return;
    }
    seen = now;
    invalid = null;
    let config: Config;
    try {
      config = loadConfig(path);
    } catch (err) {
      invalid = err as Error;
      return;
    }
    handlers.onChange(config);
  };
  const timer = setInterval(look, intervalMs);
  timer.unref();
  return {
    check: (submittedAt) => {
      if (submittedAt !== undefined && lookedAt > submittedAt) return;
      lookedAt = Date.now();
      // An invalid version stays unreported here: the poll reports it once it has stood.
      if (fingerprint(path) !== seen) look();
    },
    stop: () => clearInterval(timer),
  };
}
