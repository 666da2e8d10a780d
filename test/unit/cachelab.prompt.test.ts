import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cohortComponents, cohortKey } from '../../main/cachelab/cohort.js';
import { buildNaivePrompt, buildPrompt, normalizeList, PROMPT_PROTOCOL } from '../../main/cachelab/prompt.js';
import { parseConfig } from '../../main/core/config.js';
import type { Task } from '../../main/tasks/types.js';
import { resultJsonSchema } from '../../main/tasks/contract/result-schemas.js';
import { makeHome, type TestHome } from '../helpers/env.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome({ config: parseConfig({ gateways: { gw: { base_url: 'http://127.0.0.1:9/v1', key_env: 'K' }, gw2: { base_url: 'http://127.0.0.1:8/v1', key_env: 'K' } } }) });
});
afterEach(() => h.cleanup());

const submit = async (extra: Record<string, unknown> = {}): Promise<Task> =>
  (await h.call('delegate_task', { objective: 'Find the entry point', workspace: h.repo, worker: 'codex', gateway: 'gw', reasoning_effort: 'low', ...extra })).task;
const cohortOf = (id: string) => (h.engine.db.prepare('SELECT cohort FROM tasks WHERE id = ?').get(id) as { cohort: string }).cohort;
const prompt = (t: Task) => buildPrompt(t, { resultSchema: resultJsonSchema(t.kind), config: h.engine.config, db: h.engine.db });

describe('prompt protocol', () => {
  it('puts the stable part first, identical for every task of a cohort, and the task last', async () => {
    const a = await submit({ objective: 'Question A', allowed_paths: ['src/b', 'src/a', 'src/a'], success_criteria: [' names a file ', 'names a file'], verify: [['npm', 'test'], 'npm run lint'] });
    const b = await submit({ objective: 'Question B' });
    const pa = prompt(a);
    const pb = prompt(b);
    expect(pa.stablePrefix).toBe(pb.stablePrefix);
    expect(pa.text.startsWith(pa.stablePrefix)).toBe(true);
    expect(pa.stablePrefix.startsWith(`[${PROMPT_PROTOCOL}]`)).toBe(true);
    const order = ['# Role', '# Result contract', '# Rules', '# Role rules', '# Task', '# Workspace', '# Allowed paths', '# Success criteria', '# Verification'];
    const at = order.map((s) => pa.text.indexOf(s));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((x, y) => x - y)).toEqual(at);
    expect(pa.text).toContain('# Allowed paths\n- src/a\n- src/b\n');
    expect(pa.text).toContain('# Success criteria\n- names a file\n');
    expect(pa.text).toContain('- npm test\n- npm run lint');
    expect(pa.stablePrefix).not.toContain('Question A');
    expect(normalizeList(['b', ' a ', '', 'b'], true)).toEqual(['a', 'b']);
    // The naive layout leads with the task text, so two tasks share no prefix.
    const na = buildNaivePrompt(a, { resultSchema: resultJsonSchema('explore'), config: h.engine.config });
    expect(na.startsWith('# Task\nQuestion A')).toBe(true);
  });

  it('includes the profile and its contract', async () => {
    const t = await submit({ profile: 'fast_worker' });
    expect(prompt(t).stablePrefix).toMatch(/# Profile\nfast_worker: \{"kinds":\["execute","explore","review"\],"model":null,"reasoning_effort":"low","worker":null\}/);
    expect(prompt(t).contractHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('stores a cohort at creation: same route → same cohort, any route change → another', async () => {
    const base = cohortOf((await submit()).id);
    expect(base).toMatch(/^[0-9a-f]{16}$/);
    expect(cohortOf((await submit({ objective: 'other text', allowed_paths: ['x'] })).id)).toBe(base);
    await h.call('add_context_pack', { name: 'p', version: '1', text: 'pack' });
    const variants = [
      { gateway: 'gw2' }, { reasoning_effort: 'high' }, { model: 'gpt-5.5' }, { kind: 'review' }, { kind: 'execute', mode: 'auto_execute' },
      { worker: 'claude-code' }, { profile: 'fast_worker' }, { context_pack: 'p' },
    ];
    const keys = new Set([base]);
    for (const v of variants) keys.add(cohortOf((await submit(v)).id));
    expect(keys.size).toBe(variants.length + 1);
    const t = await submit();
    const c = cohortComponents(h.engine.config, h.engine.db, t);
    expect(c).toMatchObject({ gateway: 'gw', model: 'gpt-5.5-mini', reasoningEffort: 'low', sandbox: 'read-only', protocol: PROMPT_PROTOCOL, toolContract: 'codex:read-only' });
    expect(cohortKey(h.engine.config, h.engine.db, t)).toBe(base);
  });

  it('records worker.prompt with hashes and byte counts only, and refreshes the cohort on a changed route', async () => {
    const t = await submit();
    const before = cohortOf(t.id);
    h.engine.db.prepare("UPDATE tasks SET reasoning_effort = 'high' WHERE id = ?").run(t.id);
    const { recordPrompt } = await import('../../main/cachelab/prompt-record.js');
    const fresh = (await h.call('get_task', { id: t.id })).task as Task;
    const p = prompt(fresh);
    h.engine.write(() => recordPrompt(h.engine, fresh, p, { model: 'gpt-5.5', sandbox: 'read-only' }));
    const { events } = await h.call('get_events', { task_id: t.id, types: ['worker.prompt'] });
    const e = events[0].payload;
    expect(Object.keys(e).sort()).toEqual(['attempt', 'cohort', 'model', 'packBytes', 'packHash', 'promptBytes', 'promptHash', 'protocol', 'sandbox', 'schemaBytes', 'schemaHash', 'stableBytes', 'stableHash'].sort());
    expect(e.promptBytes).toBe(Buffer.byteLength(p.text));
    expect(JSON.stringify(e)).not.toContain('Find the entry point');
    expect(e.cohort).not.toBe(before);
    expect(cohortOf(t.id)).toBe(e.cohort);
  });
});
