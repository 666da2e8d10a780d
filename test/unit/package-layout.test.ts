import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGED_CLI } from '../../main/platform/launch.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/env.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('package layout', () => {
  it('the packaged app CLI path that mcp-config prints is an entry the build produces', () => {
    expect(PACKAGED_CLI[0]).toBe('app.asar');
    expect(existsSync(join(ROOT, ...PACKAGED_CLI.slice(1)))).toBe(true);
    expect(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8')).toContain(`app.asar/${PACKAGED_CLI.slice(1).join('/')}`);
  });

  it("package.json: bin runs the bundle, exports the library with types, files ship the build", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, any>;
    expect(pkg.private).toBeUndefined();
    expect(pkg.bin.lightworker).toBe('bin/lightworker.js');
    expect(readFileSync(join(ROOT, pkg.bin.lightworker), 'utf8')).toContain("import('../out/main/cli.js')");
    // `main` is what Electron starts (`electron .`, electron-builder); Node's `import 'lightworker'` uses `exports`.
    expect(pkg.main).toBe('out/main/index.js');
    expect(pkg.exports['.']).toEqual({ types: './out/types/lib/index.d.ts', import: './out/main/lib.js', require: './out/main/lib.js' });
    for (const f of [pkg.exports['.'].types, pkg.exports['.'].import]) expect(existsSync(join(ROOT, f))).toBe(true);
    expect(Object.keys(pkg.dependencies)).not.toContain('tsx');
    expect(pkg.scripts.prepare).toMatch(/scripts\/build\.js --if-stale/);
  });

  it('--version is package.json\'s, on the fast path and through the full CLI alike', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const t = tempDir();
    try {
      expect((await runCli(['--version'], { home: t.dir })).stdout.trim()).toBe(version);
      expect((await runCli(['--home', t.dir, '--version'], { home: t.dir })).stdout.trim()).toBe(version);
    } finally {
      t.cleanup();
    }
  });
});
