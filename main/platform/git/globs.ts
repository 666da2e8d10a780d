/**
 * Path globs for `allowed_paths` and setup `copy` lists, matched against repository-relative POSIX
 * paths and anchored at the repository root: `*` and `?` stay within one path segment, `**` spans any
 * number of segments, `[abc]` is a class, `{a,b}` alternatives. A pattern with no glob characters
 * also matches everything below it (`src` ≡ `src/**`). Written here (not node:path matchesGlob) because
 * that one is experimental on Node 20 and prints a warning.
 */

const cache = new Map<string, RegExp>();

function hasMagic(p: string): boolean {
  return /[*?[{]/.test(p);
}

function normalize(p: string): string {
  return p
    .replace(/\\/g, '/')
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');
}

function toRegexSource(glob: string): string {
  let re = '';
  let inBrace = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        const atEnd = i + 2 === glob.length || glob[i + 2] === '/';
        if (atStart && atEnd) {
          // `**/` matches zero or more whole segments; a trailing `**` matches the rest.
          if (glob[i + 2] === '/') {
            re += '(?:[^/]+/)*';
            i += 2;
          } else {
            re += '.*';
            i += 1;
          }
          continue;
        }
        i += 1;
      }
      re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) re += '\\[';
      else {
        const body = glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        re += `[${body}]`;
        i = end;
      }
    } else if (c === '{') {
      inBrace++;
      re += '(?:';
    } else if (c === '}' && inBrace) {
      inBrace--;
      re += ')';
    } else if (c === ',' && inBrace) re += '|';
    else re += c.replace(/[.+^$()|\\/]/g, '\\$&');
  }
  return re;
}

function compile(glob: string): RegExp {
  const g = normalize(glob);
  let re = cache.get(g);
  if (!re) {
    const src = toRegexSource(g);
    re = new RegExp(hasMagic(g) ? `^${src}$` : `^${src}(?:/.*)?$`);
    cache.set(g, re);
  }
  return re;
}

/** True when repository-relative `path` matches `glob`. */
export function matchGlob(path: string, glob: string): boolean {
  return compile(glob).test(normalize(path));
}

export function matchAny(path: string, globs: readonly string[]): boolean {
  return globs.some((g) => matchGlob(path, g));
}

/**
 * Could a file below directory `dir` (repository-relative) match `glob`? Used to avoid walking
 * folders (node_modules…) that no pattern can reach.
 */
export function mayContainMatch(dir: string, glob: string): boolean {
  const d = normalize(dir).split('/').filter(Boolean);
  const g = normalize(glob).split('/');
  if (!hasMagic(normalize(glob))) {
    // literal: a prefix either way
    const n = Math.min(d.length, g.length);
    for (let i = 0; i < n; i++) if (d[i] !== g[i]) return false;
    return true;
  }
  for (let i = 0; i < d.length; i++) {
    if (g[i] === undefined) return false;
    if (g[i].includes('**')) return true;
    if (i >= g.length - 1) return false; // the last segment names files, not folders
    if (!compile(g[i]).test(d[i])) return false;
  }
  return true;
}
