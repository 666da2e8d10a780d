// MCP figures: tools/list size (bytes, ≈tokens = bytes/4) for the full and core tool sets,
// time from spawn to the initialize answer, and get_task latency over a real stdio child.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { makeRepo } from '../helpers/env.js';
import { realisticTask, StdioChild } from '../integration/mcp.helpers.js';

const CALLS = 300;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function listSize(home: string, env: Record<string, string>): Promise<{ bytes: number; tools: number }> {
  const c = new StdioChild(home, env);
  try {
    await c.initialize();
    const r = await c.request('tools/list');
    return { bytes: Buffer.byteLength(JSON.stringify(r.result)), tools: r.result.tools.length };
  } finally {
    await c.stop();
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'lw-bench-mcp-'));
  try {
    const home = join(dir, 'home');
    const repo = makeRepo(join(dir, 'repo'));
    const full = await listSize(home, {});
    const core = await listSize(home, { LIGHTWORKER_MCP_TOOLS: 'core' });

    let listTasksBytes = 0;
    let listTasksWire = 0;
    let listTasksCount = 0;
    const t0 = performance.now();
    const c = new StdioChild(home);
    await c.initialize();
    const initMs = performance.now() - t0;
    await c.request('tools/list');
    const listMs = performance.now() - t0;
    const d = await c.callTool('delegate_task', { objective: 'bench', workspace: repo, kind: 'explore', metadata: { mock: { sleep_ms: 0 } } });
    const id = d.result.structuredContent.task.id;
    // list_tasks of 100 realistic tasks, the default call: the records' bytes and the whole answer on the wire.
    // Execute tasks await approval, so no background runner starts running them during the bench.
    {
      const tasks = Array.from({ length: 100 }, (_, i) => realisticTask(repo, i, 'execute'));
      const r = await c.callTool('delegate_batch', { tasks });
      if (r.result.isError) throw new Error(`delegate_batch failed: ${JSON.stringify(r.result)}`);
    }
    const listed = await c.callTool('list_tasks', {});
    listTasksBytes = Buffer.byteLength(JSON.stringify(listed.result.structuredContent));
    listTasksWire = Buffer.byteLength(JSON.stringify(listed));
    listTasksCount = listed.result.structuredContent.tasks.length;
    for (let i = 0; i < 20; i++) await c.callTool('get_task', { id }); // warm-up
    const lat: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const s = performance.now();
      const r = await c.callTool('get_task', { id });
      lat.push(performance.now() - s);
      if (r.result.isError) throw new Error(`get_task failed: ${JSON.stringify(r.result)}`);
    }
    await c.stop();
    lat.sort((a, b) => a - b);
    return {
      tools_list_tools: full.tools,
      tools_list_bytes: full.bytes,
      tools_list_tokens_est: Math.round(full.bytes / 4),
      core_tools_list_tools: core.tools,
      core_tools_list_bytes: core.bytes,
      core_tools_list_tokens_est: Math.round(core.bytes / 4),
      list_tasks_default_tasks: listTasksCount,
      list_tasks_default_bytes: listTasksBytes,
      list_tasks_default_wire_bytes: listTasksWire,
      spawn_to_initialize_ms: initMs,
      spawn_to_tools_list_ms: listMs,
      get_task_calls: CALLS,
      get_task_p50_ms: pct(lat, 50),
      get_task_p95_ms: pct(lat, 95),
      get_task_max_ms: lat[lat.length - 1],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `node bin/run-ts.js test/bench/mcp.ts` runs it alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const figures = await run();
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(28)} ${typeof v === 'number' ? Number(v.toFixed(3)) : v}\n`);
  process.stdout.write(JSON.stringify(figures) + '\n');
  process.exit(0);
}
