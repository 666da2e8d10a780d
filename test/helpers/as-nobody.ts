import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Another local user's view, for privacy tests: commands run as uid `nobody` (setpriv, as root). Null
 * when that is not possible here (not root, no setpriv), with the reason.
 */
export function nobodyUnavailable(): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (cannot switch to nobody)';
  if (!existsSync('/usr/bin/setpriv')) return 'no setpriv';
  return null;
}

function asNobody(script: string, args: string[] = []): string {
  return execFileSync('/usr/bin/setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '/bin/sh', '-c', script, 'sh', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

/** Of `paths`, those `nobody` can read (a file it can cat, a folder it can list). */
export function readableByNobody(paths: string[]): string[] {
  if (!paths.length) return [];
  const out = asNobody('for p in "$@"; do if [ -d "$p" ]; then ls "$p" >/dev/null 2>&1 && echo "$p"; else cat "$p" >/dev/null 2>&1 && echo "$p"; fi; done; true', paths);
  return out.split('\n').filter(Boolean);
}

/** Every process's command line as `nobody` reads it from /proc/<pid>/cmdline (NULs and newlines as spaces). */
export function cmdlinesSeenByNobody(): { pid: number; cmdline: string }[] {
  const out = asNobody('for f in /proc/[0-9]*/cmdline; do p=${f#/proc/}; p=${p%/cmdline}; c=$(tr "\\000\\n" "  " < "$f" 2>/dev/null) && [ -n "$c" ] && printf "%s\\t%s\\n" "$p" "$c"; done; true');
  return out.split('\n').filter(Boolean).map((l) => {
    const tab = l.indexOf('\t');
    return { pid: Number(l.slice(0, tab)), cmdline: l.slice(tab + 1) };
  });
}
