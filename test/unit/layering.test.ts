import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { folderCycles, folderImports } from '../../eslint-rules/import-graph.js';
import { loadBaseline } from '../../eslint-rules/layering.js';

const baselineFile = JSON.parse(readFileSync(new URL('../../eslint-rules/layering-baseline.json', import.meta.url), 'utf8')) as { cycles: string[]; allowed: string[] };
const lint = async (code: string, filePath: string) => {
  const [r] = await new ESLint({ cwd: new URL('../..', import.meta.url).pathname }).lintText(code, { filePath });
  return r.messages.filter((m) => m.ruleId?.startsWith('layering/'));
};

describe('the layers of main/', () => {
  it('npm run lint fails on an import against the layers', async () => {
    const messages = await lint("import { runCommand } from '../commands/table.js';\nexport const x = runCommand;\n", 'main/core/planted.ts');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ ruleId: 'layering/layers', severity: 2 });
    expect(messages[0].message).toMatch(/core\/ may not import commands\//);
    // A type import is a dependency too.
    const typed = await lint("import type { Engine } from '../engine.js';\nexport type E = Engine;\n", 'main/store/planted.ts');
    expect(typed.map((m) => m.severity)).toEqual([2]);
  });

  it('a folder without a layer is refused, and a downward import is fine', async () => {
    expect((await lint('export const x = 1;\n', 'main/newroom/x.ts')).map((m) => m.message)).toEqual([expect.stringMatching(/main\/newroom has no layer/)]);
    expect(await lint("import { AppError } from '../core/errors.js';\nexport const E = AppError;\n", 'main/scheduler/planted.ts')).toEqual([]);
  });

  it("the baseline's imports are warnings, and each still occurs (it only shrinks)", async () => {
    const [first] = baselineFile.allowed;
    const [file, folder] = first.split(' -> ');
    const real = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
    const messages = await lint(real, file);
    expect(messages.filter((m) => m.severity === 2)).toEqual([]);
    expect(messages.some((m) => m.ruleId === 'layering/layers-baseline' && m.message.includes(`imports ${folder}/`))).toBe(true);
    const occurring = new Set(folderImports().map((e) => e.key));
    expect(baselineFile.allowed.filter((k) => !occurring.has(k))).toEqual([]);
  });

  it('the folders make no cycle beyond the baseline, and none at all without its imports', () => {
    const edges = folderImports();
    const baseline = loadBaseline();
    expect(folderCycles(edges.filter((e) => !baseline.has(e.key)))).toEqual([]);
    expect(folderCycles(edges)).toEqual(baselineFile.cycles);
  });

  it('finds a planted cycle', () => {
    expect(folderCycles([{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'a' }, { from: 'c', to: 'd' }])).toEqual(['a b c']);
  });
});
