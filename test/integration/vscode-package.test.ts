import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const VSIX = join(ROOT, 'vscode-extension', 'lightworker-vscode-bridge.vsix');
const VSCE = join(ROOT, 'node_modules', '.bin', 'vsce');

/** Entries of a zip file (a .vsix is one), read from its central directory; `read` inflates one. */
function readZip(path: string): { names: string[]; read(name: string): Buffer } {
  const buf = readFileSync(path);
  const eocd = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const count = buf.readUInt16LE(eocd + 10);
  let at = buf.readUInt32LE(eocd + 16);
  const entries = new Map<string, { method: number; size: number; local: number }>();
  for (let i = 0; i < count; i++) {
    const nameLen = buf.readUInt16LE(at + 28);
    const extra = buf.readUInt16LE(at + 30) + buf.readUInt16LE(at + 32);
    const name = buf.subarray(at + 46, at + 46 + nameLen).toString('utf8');
    entries.set(name, { method: buf.readUInt16LE(at + 10), size: buf.readUInt32LE(at + 20), local: buf.readUInt32LE(at + 42) });
    at += 46 + nameLen + extra;
  }
  return {
    names: [...entries.keys()].sort(),
    read(name) {
      const e = entries.get(name)!;
      const start = e.local + 30 + buf.readUInt16LE(e.local + 26) + buf.readUInt16LE(e.local + 28);
      const data = buf.subarray(start, start + e.size);
      return e.method === 8 ? inflateRawSync(data) : data;
    },
  };
}

describe('npm run vscode:package', () => {
  it('builds the extension and packages a .vsix with only what the editor needs', { timeout: 180_000 }, async (ctx) => {
    if (!existsSync(VSCE)) {
      if (process.env.CI === 'true') throw new Error(`@vscode/vsce is not installed (${VSCE}); it is a devDependency`);
      ctx.skip();
    }
    const out = await new Promise<{ code: number; text: string }>((resolve) => {
      execFile('npm', ['run', 'vscode:package'], { cwd: ROOT, timeout: 170_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, text: stdout + stderr }));
    });
    expect(out.code, out.text).toBe(0);
    expect(statSync(VSIX).size).toBeGreaterThan(1000);
    const zip = readZip(VSIX);
    expect(zip.names).toEqual(['[Content_Types].xml', 'extension.vsixmanifest', 'extension/LICENSE.txt', 'extension/out/extension.cjs', 'extension/package.json', 'extension/readme.md']);
    const manifest = JSON.parse(zip.read('extension/package.json').toString('utf8'));
    expect(manifest).toMatchObject({ name: 'lightworker-vscode-bridge', publisher: 'lightworker', main: './out/extension.cjs', engines: { vscode: expect.stringMatching(/^\^1\.\d+/) } });
    expect(manifest.contributes.commands.map((c: { command: string }) => c.command)).toEqual(['lightworkerBridge.showStatus', 'lightworkerBridge.listAgents', 'lightworkerBridge.restart']);
    expect(zip.read('extension/out/extension.cjs').equals(readFileSync(join(ROOT, 'vscode-extension', 'out', 'extension.cjs')))).toBe(true);
    expect(zip.read('extension.vsixmanifest').toString('utf8')).toContain('Id="lightworker-vscode-bridge"');
  });
});
