import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'lw-renderer-types-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const client = JSON.stringify(join(root, 'renderer/src/api/client.js'));
/** Each probe is one file of console code; `good` must compile, every other one must not. */
const PROBES: Record<string, string> = {
  good: `const r = await api().call('get_task', { id: 't1' });
export const name: string = r.task.name;
export const doctor = await api().call('run_doctor');
export const ok: boolean = doctor.ok;`,
  misspeltName: `await api().call('get_tsk', { id: 't1' });`,
  wrongInput: `await api().call('get_task', { id: 1 });`,
  missingInput: `await api().call('get_task');`,
  wrongResultUse: `const r = await api().call('list_tasks', {});
export const n: number = r.tasks.length + r.total;`,
  handAssertedResult: `await api().call<{ task: { nme: string } }>('get_task', { id: 't1' });`,
};

/** Type-checks every probe in one compiler run, with the console's own compiler options; errors by probe. */
async function checkProbes(): Promise<Record<string, string[]>> {
  const files = Object.entries(PROBES).map(([name, body]) => {
    const file = join(dir, `${name}.ts`);
    writeFileSync(file, `import { api } from ${client};\n${body}\n`);
    return file;
  });
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: join(root, 'renderer/tsconfig.json'),
      compilerOptions: { typeRoots: [join(root, 'node_modules/@types')], noEmit: true },
      include: [],
      files: [join(root, 'renderer/src/env.d.ts'), ...files],
    }),
  );
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const out = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json'), '--pretty', 'false'], { cwd: dir }).then(
    (r) => r.stdout,
    (err: { stdout?: string }) => err.stdout ?? String(err),
  );
  const errors: Record<string, string[]> = Object.fromEntries(Object.keys(PROBES).map((k) => [k, []]));
  for (const line of out.split('\n')) {
    const m = /([A-Za-z]+)\.ts\(\d+,\d+\): error (TS\d+)/.exec(line);
    if (m) (errors[m[1]] ??= []).push(m[2]);
    else if (/error TS/.test(line)) (errors.other ??= []).push(line);
  }
  return errors;
}

describe("the console's command client", () => {
  it('takes names, inputs and results from the command table: a wrong one does not compile', async () => {
    const errors = await checkProbes();
    expect(errors.other ?? []).toEqual([]);
    expect(errors.good).toEqual([]);
    expect(errors.misspeltName).toContain('TS2345');
    expect(errors.wrongInput).toContain('TS2322');
    expect(errors.missingInput).toContain('TS2554');
    expect(errors.wrongResultUse).toContain('TS2339');
    // A result type written at the call site is refused: the table says what a command returns.
    expect(errors.handAssertedResult.length).toBeGreaterThan(0);
  }, 120_000);
});
