import { it } from 'vitest';
import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { ACP_AGENTS } from '../../main/workers/acp/agents.js';
import { makeBench, makeTurn, play } from '../../test/helpers/worker-cli.js';
it('dbg', { timeout: 120000 }, async () => {
  const b = await makeBench();
  const def = ACP_AGENTS.find((a) => a.name === (process.env.AGENT ?? 'gemini'))!;
  b.gw.addScript('edit', process.env.E429 ? { turns: [{ error: { status: 429, message: 'Rate limit reached' } }] } : { turns: [{ text: 'Writing.', tools: [{ write: { path: 'from-tool.txt', content: 'x\n' } }] }, { text: 'Edited one file.' }] });
  const t = makeTurn(b, def.name, process.env.MODEL ?? 'gemini-2.5-pro', { prompt: 'Do the task. [[script:edit]]' });
  const r = await play(acpAdapter({ name: def.name, def }), t);
  console.log(JSON.stringify(r.result, null, 1).slice(0, 3000));
  console.log(JSON.stringify(r.events, null, 1).slice(0, 6000));
  for (const q of b.gw.requests) console.log(q.method, q.path, q.outcome, JSON.stringify(q.summary).slice(0, 400));
  const body = JSON.stringify(b.gw.requests.find((q) => q.body)?.body ?? {});
  const i = body.indexOf('directory'); console.log('CWD-CONTEXT', body.slice(Math.max(0, i - 300), i + 300));
  await b.cleanup();
});
