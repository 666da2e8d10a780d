// Development aid (run.ts skips `_` files): an MCP server over stdio under `node --cpu-prof`, N pings and N
// get_task calls timed from the client, then the server's self time by function and by file.
// `node bin/run-ts.js test/bench/_profile-mcp.ts [N] [outDir]`
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { makeRepo } from '../helpers/env.js';
import { StdioChild } from '../integration/mcp.helpers.js';

const N = Number(process.argv[2] ?? 2000);
const out = process.argv[3] ?? '/tmp/lw-mcp-prof';
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'lw-prof-mcp-'));
const home = join(dir, 'home');
const repo = makeRepo(join(dir, 'repo'));
const prof = process.env.NO_PROF ? [] : ['--cpu-prof', `--cpu-prof-dir=${out}`, '--cpu-prof-interval=100'];
const c = new StdioChild(home, {}, ['mcp'], prof);
await c.initialize();
const d = await c.callTool('delegate_task', { objective: 'bench', workspace: repo, kind: 'execute' });
const id = d.result.structuredContent.task.id;
const time = async (label: string, call: () => Promise<unknown>) => {
  for (let i = 0; i < 50; i++) await call();
  const lat: number[] = [];
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await call();
    lat.push(performance.now() - s);
  }
  lat.sort((a, b) => a - b);
  process.stdout.write(`${label}: p50 ${lat[Math.floor(N / 2)].toFixed(3)} ms, p95 ${lat[Math.floor(N * 0.95)].toFixed(3)} ms\n`);
};
await time('ping', () => c.request('ping'));
await time('get_task', () => c.callTool('get_task', { id }));
await time('list_tasks', () => c.callTool('list_tasks', {}));
await c.stop();
if (!process.env.NO_PROF) {
  const file = readdirSync(out).find((f) => f.endsWith('.cpuprofile'));
  const p = JSON.parse(readFileSync(join(out, file!), 'utf8')) as { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  p.samples.forEach((s, i) => {
    const n = byId.get(s)!;
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    const f = n.callFrame.url.includes('node_modules') ? n.callFrame.url.replace(/.*node_modules\//, '').split('/').slice(0, 2).join('/') : n.callFrame.url.split('/').slice(-1)[0] || n.callFrame.functionName;
    byFile.set(f, (byFile.get(f) ?? 0) + dt);
  });
  const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([n, v]) => `  ${((100 * v) / total).toFixed(1)}%  ${n}`).join('\n');
  process.stdout.write(`server profile ${(total / 1000).toFixed(0)} ms\nby function:\n${top(self, 30)}\nby file:\n${top(byFile, 15)}\n`);
}
rmSync(dir, { recursive: true, force: true });
