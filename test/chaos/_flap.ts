// A dev aid: the guards scenario's flapping worker alone, N times (`node bin/run-ts.js test/chaos/_flap.ts 5`),
// to check its "starts while a breaker was open" figure without the rest of the chaos run.
import { flapping } from './guards.js';

const n = Number(process.argv[2] ?? 5);
for (let i = 0; i < n; i++) {
  const notes: string[] = [];
  const f = await flapping({ runaways: 0, limited: 0, flaps: 8, log: () => {} }, notes);
  process.stdout.write(`${JSON.stringify(f)} ${notes.join('; ')}\n`);
}
