import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildPrompt } from '../../main/cachelab/prompt.js';
import type { ContextPack } from '../../main/cachelab/context-packs.js';
import type { WorkerTurn } from '../../main/workers/adapter.js';
import { codexAdapter, splitStablePrefix } from '../../main/workers/codex.js';
import { minimalEnv } from '../../main/workers/env.js';
import { resultJsonSchema } from '../../main/tasks/contract/result-schemas.js';
import { tempDir } from '../helpers/env.js';
import { fakeTask } from '../helpers/worker-cli.js';

/**
 * The Codex adapter sends LightWorker's stable prefix as developer instructions (before Codex's
 * per-worktree environment context) and only the task-specific part as the user prompt.
 */
const tmp = tempDir('lw-codex-prompt-');
afterAll(() => tmp.cleanup());
const pack = (text: string): ContextPack => ({ name: 'house', version: '1', text, hash: 'h'.repeat(64), bytes: Buffer.byteLength(text), createdAt: 0 });
const promptFor = (objective: string, workspace: string, packText = 'House rules.\n') =>
  buildPrompt({ ...fakeTask('execute', 'codex'), objective, workspace, verify: ['npm test'] }, { resultSchema: resultJsonSchema('execute'), contextPack: pack(packText) });
const turn = (over: Partial<WorkerTurn>): WorkerTurn => ({
  task: fakeTask('execute', 'codex'), prompt: 'p', workdir: tmp.dir, sandbox: 'workspace-write', resultSchema: null, resumeSessionId: null,
  runDir: tmp.dir, model: 'm', reasoningEffort: 'low', gateway: null, baseEnv: minimalEnv(), ...over,
});

describe('codex prompt delivery', () => {
  it('splits a protocol prompt exactly at the end of its stable prefix, losing nothing', () => {
    const built = promptFor('Add a flag.', '/w/wt-1');
    const { developer, user } = splitStablePrefix(built.text);
    expect(developer).toBe(built.stablePrefix);
    expect(user.startsWith('# Task\nAdd a flag.')).toBe(true);
    expect(`${developer}\n\n${user}`).toBe(built.text);
  });

  it('gives every task of a cohort the same developer part, even when the pack contains a "# Task" heading', () => {
    const tricky = 'Intro.\n\n# Task\nnot a real task heading\n';
    const a = splitStablePrefix(promptFor('One.', '/w/wt-1', tricky).text);
    const b = splitStablePrefix(promptFor('Two.', '/w/wt-2', tricky).text);
    expect(a.developer).not.toBeNull();
    expect(a.developer).toBe(b.developer);
    expect(a.user).toContain('One.');
    expect(b.user).toContain('Two.');
  });

  it('sends anything else (follow-ups, unknown layouts) whole', () => {
    expect(splitStablePrefix('LightWorker ran the verification commands and they failed.\n\n# Task\nx')).toEqual({ developer: null, user: 'LightWorker ran the verification commands and they failed.\n\n# Task\nx' });
    expect(splitStablePrefix('[lw-prompt/0]\n# Role\nr\n\n# Task\nx').developer).toBeNull();
  });

  it('passes the stable part as developer_instructions (its private config.toml, not argv) on a first turn only, the rest on stdin, with skills off', async () => {
    const built = promptFor('Add a flag.', '/w/wt-1');
    const config = join(tmp.dir, 'codex-home', 'config.toml');
    const first = await codexAdapter.buildSpawn(turn({ prompt: built.text }));
    expect(first.args.some((a) => a.startsWith('developer_instructions='))).toBe(false);
    expect(readFileSync(config, 'utf8')).toContain(`developer_instructions = ${JSON.stringify(built.stablePrefix)}`);
    expect(statSync(config).mode & 0o777).toBe(0o600);
    expect(first.args.at(-1)).toBe('-');
    expect(first.stdin).toBe(built.text.slice(built.stablePrefix.length + 2));
    expect(first.args.join('\n')).not.toContain('Add a flag.');
    expect(first.args).toEqual(expect.arrayContaining(['skills.bundled.enabled=false', 'skills.include_instructions=false']));
    const followUp = await codexAdapter.buildSpawn(turn({ prompt: built.text, resumeSessionId: 'th-1' }));
    expect(existsSync(config)).toBe(false);
    expect(followUp.args.slice(-3)).toEqual(['resume', 'th-1', '-']);
    expect(followUp.stdin).toBe(built.text);
  });
});
