// Per-CLI turn latency through the scripted gateway: a one-request text turn and a two-request
// tool turn (write a file, then answer), a few times each, with the real codex / claude / opencode.
// Figures are wall-clock ms from spawn to exit (runTurn), median and min; the CLI version is reported.
import type { WorkerAdapter } from '../../main/workers/adapter.js';
import { claudeCodeAdapter } from '../../main/workers/claude-code.js';
import { findCliBinary, probeVersion, versionNumber } from '../../main/workers/cli-detect.js';
import { codexAdapter } from '../../main/workers/codex.js';
import { opencodeAdapter } from '../../main/workers/opencode.js';
import { makeBench, makeTurn, play } from '../helpers/worker-cli.js';

const CLIS: { worker: string; bin: string; adapter: WorkerAdapter; model: string }[] = [
  { worker: 'codex', bin: 'codex', adapter: codexAdapter, model: 'gpt-5.5' },
  { worker: 'claude-code', bin: 'claude', adapter: claudeCodeAdapter, model: 'claude-sonnet-4-5' },
  { worker: 'opencode', bin: 'opencode', adapter: opencodeAdapter, model: 'fake-model' },
];
const ROUNDS = Number(process.env.LW_BENCH_WORKER_ROUNDS ?? 3);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = { rounds: ROUNDS };
  for (const c of CLIS) {
    const bin = findCliBinary(c.bin);
    const version = bin ? versionNumber((await probeVersion(bin, 20_000)).line) : null;
    if (!version) {
      figures[`${c.worker}.version`] = 'not runnable';
      continue;
    }
    figures[`${c.worker}.version`] = version;
    const bench = await makeBench();
    try {
      bench.gw.addScript('text', { turns: [{ text: 'Plain answer.' }] });
      bench.gw.addScript('tool', { turns: [{ tools: [{ write: { path: 'bench.txt', content: 'x\n' } }] }, { text: 'Wrote it.' }] });
      for (const kind of ['text', 'tool'] as const) {
        const times: number[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          const turn = makeTurn(bench, c.worker, c.model, { prompt: `Bench turn ${i}. [[script:${kind}]]`, kind: kind === 'text' ? 'explore' : 'execute' });
          const { result, ms } = await play(c.adapter, turn);
          if (!result.ok) throw new Error(`${c.worker} ${kind} turn failed: ${result.error?.message}`);
          times.push(ms);
        }
        figures[`${c.worker}.${kind}_turn_ms.median`] = median(times);
        figures[`${c.worker}.${kind}_turn_ms.min`] = Math.min(...times);
      }
    } finally {
      await bench.cleanup();
    }
  }
  return figures;
}
