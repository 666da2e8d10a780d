import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** Absolute path of an executable found on PATH (or the path itself when absolute and executable). */
export function findOnPath(cmd: string, path = process.env.PATH ?? ''): string | null {
  const exts = process.platform === 'win32' ? (process.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  const candidates = isAbsolute(cmd) || cmd.includes('/') ? [cmd] : path.split(delimiter).filter(Boolean).map((d) => join(d, cmd));
  for (const c of candidates) {
    for (const ext of exts) {
      try {
        accessSync(c + ext, constants.X_OK);
        return c + ext;
      } catch {
        // keep looking
      }
    }
  }
  return null;
}
