import { existsSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECURITY_HEADERS } from './security.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/** The checkout or app folder: the nearest ancestor of this module holding LightWorker's package.json. */
export function findPackageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'lightworker') return dir;
      } catch {
        // not ours; keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find LightWorker's package.json above ${from}`);
    dir = up;
  }
}

/** Where the built renderer lives: LIGHTWORKER_RENDERER_DIR, else `<package>/out/renderer`. */
export function rendererDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIGHTWORKER_RENDERER_DIR ? resolve(env.LIGHTWORKER_RENDERER_DIR) : join(findPackageRoot(), 'out', 'renderer');
}

/**
 * Serve one file of the built renderer. Unknown paths without an extension get index.html (the console
 * routes by hash, but a bookmarked path still lands on the app). Paths never escape `root`.
 */
export function serveStatic(res: ServerResponse, root: string, urlPath: string): void {
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath);
  } catch {
    rel = '/';
  }
  if (rel === '/' || rel === '') rel = '/index.html';
  const file = normalize(join(root, rel));
  const inside = file === root || file.startsWith(root.endsWith(sep) ? root : root + sep);
  let target = inside && existsSync(file) ? file : null;
  if (!target && inside && !extname(rel)) target = join(root, 'index.html');
  if (!target || !existsSync(target)) {
    res.writeHead(404, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
    res.end('not found');
    return;
  }
  const type = TYPES[extname(target)] ?? 'application/octet-stream';
  // no-store: the console is served only to a signed-in session; nothing of it stays in a shared cache.
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': target.endsWith('index.html') ? 'no-store' : 'no-cache, private' });
  res.end(readFileSync(target));
}
