// One expensive call must not starve the rest: a burst of run_doctor calls mixed with cheap calls
// (list_tasks) against a real `lightworker mcp` child over stdio, and the same against `lightworker serve`
// over HTTP. Figures: the doctor's own latency (first, rest), and the cheap calls' p50/p95/max while the
// doctors are in flight. `node bin/run-ts.js test/bench/run.ts probe-burst` (LW_BURST_DOCTORS / LW_BURST_CHEAP
// change the burst's size; defaults 40 doctors among 400 cheap calls).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BIN, StdioChild } from '../integration/mcp.helpers.js';

const DOCTORS = Number(process.env.LW_BURST_DOCTORS ?? 40);
const CHEAP = Number(process.env.LW_BURST_CHEAP ?? 400);

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

/** The burst's order: doctors spread evenly among the cheap calls. */
function plan(): ('doctor' | 'cheap')[] {
  const every = Math.max(1, Math.floor((DOCTORS + CHEAP) / Math.max(1, DOCTORS)));
  const order: ('doctor' | 'cheap')[] = [];
  let d = 0;
  let c = 0;
  for (let i = 0; d < DOCTORS || c < CHEAP; i++) {
    const doctor = d < DOCTORS && (i % every === 0 || c >= CHEAP);
    order.push(doctor ? 'doctor' : 'cheap');
    if (doctor) d++;
    else c++;
  }
  return order;
}

async function burst(call: (kind: 'doctor' | 'cheap') => Promise<void>, prefix: string): Promise<Record<string, number>> {
  const cheap: number[] = [];
  const doctor: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    plan().map(async (kind) => {
      const t = performance.now();
      await call(kind);
      (kind === 'doctor' ? doctor : cheap).push(performance.now() - t);
    }),
  );
  const wall = performance.now() - t0;
  cheap.sort((a, b) => a - b);
  doctor.sort((a, b) => a - b);
  return {
    [`${prefix}_cheap_p50_ms`]: pct(cheap, 50),
    [`${prefix}_cheap_p95_ms`]: pct(cheap, 95),
    [`${prefix}_cheap_max_ms`]: cheap[cheap.length - 1],
    [`${prefix}_doctor_p50_ms`]: pct(doctor, 50),
    [`${prefix}_doctor_max_ms`]: doctor[doctor.length - 1],
    [`${prefix}_burst_wall_ms`]: wall,
  };
}

async function mcpBurst(home: string): Promise<Record<string, number>> {
  const c = new StdioChild(home);
  try {
    await c.initialize();
    const t = performance.now();
    const first = await c.callTool('run_doctor');
    if (first.error || first.result?.isError) throw new Error(`run_doctor failed: ${JSON.stringify(first).slice(0, 300)}`);
    const firstMs = performance.now() - t;
    const figures = await burst(async (kind) => {
      const r = await c.callTool(kind === 'doctor' ? 'run_doctor' : 'list_tasks', kind === 'doctor' ? {} : { limit: 5 });
      if (r.error || r.result?.isError) throw new Error(`${kind} failed: ${JSON.stringify(r).slice(0, 300)}`);
    }, 'mcp');
    return { mcp_doctor_first_ms: firstMs, ...figures };
  } finally {
    await c.stop();
  }
}

async function httpBurst(home: string): Promise<Record<string, number>> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--no-open', '--paused'], { env: { ...process.env, LIGHTWORKER_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const login = await new Promise<URL>((resolve, reject) => {
      let out = '';
      let errText = '';
      proc.stdout.on('data', (d) => {
        out += d;
        const m = /(http:\/\/\S+\?token=\S+)/.exec(out);
        if (m) resolve(new URL(m[1]));
      });
      proc.stderr.on('data', (d) => (errText += d));
      proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${errText.slice(-500)}`)));
    });
    const token = login.searchParams.get('token') ?? '';
    const post = async (name: string, body: unknown) => {
      const res = await fetch(new URL(`/api/commands/${name}`, login), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as { ok: boolean };
      if (!json.ok) throw new Error(`${name} failed: ${JSON.stringify(json).slice(0, 300)}`);
    };
    const t = performance.now();
    await post('run_doctor', {});
    const firstMs = performance.now() - t;
    const figures = await burst((kind) => (kind === 'doctor' ? post('run_doctor', {}) : post('list_tasks', { limit: 5 })), 'http');
    return { http_doctor_first_ms: firstMs, ...figures };
  } finally {
    proc.kill('SIGTERM');
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'lw-bench-burst-'));
  try {
    const mcp = await mcpBurst(join(dir, 'home-mcp'));
    const http = await httpBurst(join(dir, 'home-http'));
    return { doctors: DOCTORS, cheap_calls: CHEAP, ...mcp, ...http };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
