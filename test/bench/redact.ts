// Redaction throughput on worker output: the redactor runs on every stdout line a worker prints.
import { createLineRedactor, redactText } from '../../main/core/redact.js';
import { clearSecretValues, registerSecretValues } from '../../main/core/secret-values.js';

/** About `mb` MB of JSON lines like an agent's stream: messages, tool calls with paths, SHAs and code. */
function sampleLines(mb: number, plant: string | null): string[] {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < mb * 1024 * 1024; i++) {
    const text =
      i % 3 === 0
        ? `Edited src/components/Button${i}.vue: replaced the click handler; commit a94a8fe5ccb19ba61c4c0873d391e987982f${String(i % 1000).padStart(3, '0')}`
        : i % 3 === 1
          ? `const total = items.reduce((sum, item) => sum + item.price * item.quantity, 0); // line ${i}`
          : `npm test -- --run test/unit/case-${i}.test.ts passed in ${i % 97} ms${plant && i % 500 === 0 ? ` key=${plant}` : ''}`;
    const line = JSON.stringify({ type: i % 2 ? 'message' : 'tool', text });
    lines.push(line);
    bytes += line.length + 1;
  }
  return lines;
}

function throughput(lines: string[], redact: (l: string) => string = redactText): number {
  const bytes = lines.reduce((n, l) => n + l.length + 1, 0);
  const t = performance.now();
  for (const l of lines) redact(l);
  return bytes / 1024 / 1024 / ((performance.now() - t) / 1000);
}

export async function run(): Promise<Record<string, number>> {
  const mb = 10;
  clearSecretValues();
  const plain = sampleLines(mb, null);
  const noValues = throughput(plain);
  // 50 known values (gateway keys, env secrets), none of which appears.
  registerSecretValues(Array.from({ length: 50 }, (_, i) => `gw-key-${i}-${Math.random().toString(36).slice(2)}Qz`));
  const fiftyValues = throughput(plain);
  const planted = 'zz9plural-z-alpha-7QKD';
  registerSecretValues([planted]);
  const withHits = throughput(sampleLines(mb, planted));
  // The runner's path: one stateful line redactor per turn (keys printed over several lines).
  const lineRedactor = throughput(plain, createLineRedactor());
  // Whole texts of many lines (a result, a verify log, a diff): 200 lines each.
  const texts: string[] = [];
  for (let i = 0; i < plain.length; i += 200) texts.push(plain.slice(i, i + 200).join('\n'));
  const multiLine = throughput(texts);
  clearSecretValues();
  return {
    'sample, MB': mb,
    'no registered values, MB/s': noValues,
    '50 registered values, no hits, MB/s': fiftyValues,
    '51 values, a hit every 500 lines, MB/s': withHits,
    '51 values, line redactor (runner), MB/s': lineRedactor,
    '51 values, 200-line texts, MB/s': multiLine,
  };
}
