import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import { folderCycles, folderImports } from '../../eslint-rules/import-graph.js';

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

  // Only the layering rules run here (the whole of `npm run lint` over main/ takes a minute on a loaded machine).
  it('main/ as it stands: no import against the layers, and no two folders importing each other in a loop', { timeout: 300_000 }, async () => {
    const results = await new ESLint({ cwd: new URL('../..', import.meta.url).pathname, ruleFilter: ({ ruleId }) => ruleId.startsWith('layering/') }).lintFiles(['main']);
    expect(results.flatMap((x) => x.messages.filter((m) => m.ruleId?.startsWith('layering/')).map((m) => `${x.filePath}: ${m.message}`))).toEqual([]);
    expect(folderCycles(folderImports())).toEqual([]);
  });

  it('a planted cycle between two folders is found, and each of its imports fails lint', async () => {
    const edges = [...folderImports(), { file: 'main/core/planted.ts', from: 'core', to: 'scheduler', key: 'main/core/planted.ts -> scheduler' }];
    expect(folderCycles(edges).some((c) => c.includes('core') && c.includes('scheduler'))).toBe(true);
    const messages = await lint("import { startService } from '../scheduler/service.js';\nexport const s = startService;\n", 'main/core/planted.ts');
    expect(messages.map((m) => m.severity)).toEqual([2]);
  });

  it('finds a planted cycle', () => {
    expect(folderCycles([{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'a' }, { from: 'c', to: 'd' }])).toEqual(['a b c']);
  });
});
