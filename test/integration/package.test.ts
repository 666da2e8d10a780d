import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, tempDir } from '../helpers/env.js';

/**
 * The package as a user gets it: `npm pack`, installed into a temp project with its own node_modules, used
 * from another folder. The only shortcut: the tarball's dependencies install with --ignore-scripts and the
 * checkout's compiled better-sqlite3 addon (same version, same Node) is copied in, instead of compiling
 * it again (≈ 100 s here); a different version is rebuilt for real.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let t: ReturnType<typeof tempDir>;
let project: string;
let repo: string;
let bin: string;
let installError: Error | null = null;

async function run(cmd: string, args: string[], opts: { cwd: string; env?: Record<string, string>; timeout?: number }) {
  const env = { ...process.env, LIGHTWORKER_HOME: join(t.dir, 'home'), ...opts.env };
  try {
    return await exec(cmd, args, { cwd: opts.cwd, env, timeout: opts.timeout ?? 120_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`.trim());
  }
}

/** Install the tarball's dependencies without compiling better-sqlite3 again when the checkout's build fits. */
async function installTarball(tgz: string): Promise<void> {
  await run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tgz], { cwd: project, timeout: 300_000 });
  const version = (dir: string) => (JSON.parse(readFileSync(join(dir, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')) as { version: string }).version;
  const ours = join(ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  if (version(ROOT) === version(project) && existsSync(ours)) {
    const release = join(project, 'node_modules', 'better-sqlite3', 'build', 'Release');
    mkdirSync(release, { recursive: true });
    copyFileSync(ours, join(release, 'better_sqlite3.node'));
  } else {
    await run(NPM, ['rebuild', 'better-sqlite3'], { cwd: project, timeout: 600_000 });
  }
}

beforeAll(async () => {
  t = tempDir('lw-pkg-');
  project = join(t.dir, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'lw-consumer', private: true, type: 'module' }));
  repo = makeRepo(join(t.dir, 'repo'));
  bin = join(project, 'node_modules', '.bin', 'lightworker');
  try {
    const packed = await run(NPM, ['pack', '--json', '--pack-destination', t.dir, ROOT], { cwd: t.dir, timeout: 180_000 });
    const [{ filename }] = JSON.parse(packed.stdout) as { filename: string }[];
    await installTarball(join(t.dir, filename));
  } catch (err) {
    installError = err as Error;
  }
}, 900_000);
afterAll(() => t?.cleanup());

/** Without the registry (no network, empty cache) the test cannot run: say so, and fail under CI. */
function requireInstall(ctx: { skip: (note?: string) => void }): void {
  if (!installError) return;
  const why = `npm pack / install failed: ${installError.message.split('\n').slice(0, 3).join(' ')}`;
  if (process.env.CI) throw new Error(why);
  process.stderr.write(`package.test: skipped: ${why}\n`);
  ctx.skip(why);
}

describe('the packed lightworker, installed in a project of its own', () => {
  it('ships the bundle, not the sources, and no runtime tsx', () => {
    if (installError) return; // reported by the tests below
    const pkgDir = join(project, 'node_modules', 'lightworker');
    const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; private?: boolean };
    expect(manifest.private).toBeUndefined();
    expect(Object.keys(manifest.dependencies)).not.toContain('tsx');
    expect(existsSync(join(pkgDir, 'out', 'main', 'cli.js'))).toBe(true);
    expect(existsSync(join(pkgDir, 'out', 'types', 'lib', 'index.d.ts'))).toBe(true);
    expect(existsSync(join(pkgDir, 'main'))).toBe(false);
    expect(existsSync(join(project, 'node_modules', 'tsx'))).toBe(false);
  });

  it('npx lightworker --version, then submit → run --until-idle → show from another folder', async (ctx) => {
    requireInstall(ctx);
    const version = await run('npx', ['--no-install', 'lightworker', '--version'], { cwd: project });
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);

    const submitted = await run(bin, ['submit', '--kind', 'explore', '--worker', 'mock', '--metadata', '{"mock":{"result":{"summary":"packaged"}}}', '--json', 'look around'], { cwd: repo });
    const { task } = JSON.parse(submitted.stdout) as { task: { id: string; workspace: string } };
    expect(task.workspace).toBe(repo);
    await run(bin, ['run', '--until-idle', '--timeout', '60'], { cwd: repo });
    const shown = JSON.parse((await run(bin, ['show', task.id, '--json'], { cwd: repo })).stdout) as { task: { status: string; result: unknown } };
    expect(shown.task).toMatchObject({ status: 'completed', result: { summary: 'packaged' } });
  });

  it('lightworker mcp from the package: delegate_task is run by the background runner it spawns', async (ctx) => {
    requireInstall(ctx);
    const home = join(t.dir, 'home-mcp');
    const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp'], cwd: repo, env: { ...(process.env as Record<string, string>), LIGHTWORKER_HOME: home }, stderr: 'pipe' });
    const client = new Client({ name: 'package-test', version: '1' });
    await client.connect(transport);
    try {
      const created = (await client.callTool({ name: 'delegate_task', arguments: { objective: 'via mcp', kind: 'explore', workspace: repo, worker: 'mock' } })) as unknown as { structuredContent: { task: { id: string } } };
      const id = created.structuredContent.task.id;
      const waited = (await client.callTool({ name: 'wait_tasks', arguments: { ids: [id], timeout_s: 55 } })) as unknown as { structuredContent: { reason: string; tasks: { status: string }[] } };
      expect(waited.structuredContent).toMatchObject({ reason: 'settled', tasks: [{ status: 'completed' }] });
    } finally {
      await client.close();
    }
  });

  // The example as a user meets it: in this ESM project, and in a fresh `npm init -y` one, which is CommonJS.
  it.for(['esm', 'commonjs'] as const)("docs/library.md's example imports 'lightworker', typechecks with tsc --noEmit, and runs a task following events() (%s project)", { timeout: 240_000 }, async (kind, ctx) => {
    requireInstall(ctx);
    const doc = readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8');
    const example = /```ts\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toContain("from 'lightworker'");
    let dir = project;
    if (kind === 'commonjs') {
      dir = join(t.dir, 'project-cjs');
      mkdirSync(dir);
      await run(NPM, ['init', '-y'], { cwd: dir });
      expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type ?? 'commonjs').toBe('commonjs');
      symlinkSync(join(project, 'node_modules'), join(dir, 'node_modules'));
    }
    writeFileSync(join(dir, 'example.ts'), example!);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] }, include: ['example.ts'] }),
    );
    await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', dir], { cwd: dir });
    const out = await run(join(ROOT, 'node_modules', '.bin', 'tsx'), ['example.ts', repo], { cwd: dir, env: { LIGHTWORKER_HOME: join(t.dir, `home-lib-${kind}`) } });
    const lines = out.stdout.trim().split('\n');
    expect(lines.slice(0, -1)).toEqual(['refused: invalid_input (objective)', 'status: starting', 'status: running', 'status: verifying', 'status: completed']);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ status: 'completed', result: { summary: expect.any(String) } });
  });
});
