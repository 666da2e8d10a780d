import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { makeHome, type TestHome } from '../helpers/env.js';
import { storedText } from '../helpers/store-dump.js';
import { SECRET_CORPUS } from './redact.test.js';
import { getTask } from '../../main/store/tasks.js';
import { unsealTask } from '../../main/tasks/secrets.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
});
afterEach(() => h.cleanup());

function counts() {
  const db = h.engine.db;
  return {
    tasks: (db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n,
    events: (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n,
  };
}

describe('task creation: bad input names the field and changes nothing', () => {
  const bad: [string, (repo: string) => Record<string, unknown>, RegExp][] = [
    ['empty objective', (repo) => ({ objective: '', workspace: repo }), /objective/],
    ['oversize objective', (repo) => ({ objective: 'x'.repeat(64 * 1024 + 1), workspace: repo }), /objective/],
    ['relative workspace', () => ({ objective: 'x', workspace: 'relative/path' }), /workspace.*absolute/],
    // A folder that is not a git repository is accepted (copy isolation); a file is not a folder.
    ['workspace is a file', () => ({ objective: 'x', workspace: process.execPath }), /workspace.*not an existing directory/],
    ['missing workspace dir', () => ({ objective: 'x', workspace: '/definitely/not/here' }), /workspace/],
    ['invalid kind', (repo) => ({ objective: 'x', workspace: repo, kind: 'deploy' }), /kind/],
    ['invalid effort', (repo) => ({ objective: 'x', workspace: repo, reasoning_effort: 'max' }), /reasoning_effort/],
    ['malformed depends_on', (repo) => ({ objective: 'x', workspace: repo, depends_on: 'abc' }), /depends_on/],
    ['unknown dependency', (repo) => ({ objective: 'x', workspace: repo, depends_on: ['01ARZ3NDEKTSV4RRFFQ69G5FAV'] }), /depends_on.*unknown/],
    ['duplicate dependency', (repo) => ({ objective: 'x', workspace: repo, depends_on: ['a', 'a'] }), /depends_on/],
    ['unknown field', (repo) => ({ objective: 'x', workspace: repo, colour: 'red' }), /colour/],
    ['model not allowed', (repo) => ({ objective: 'x', workspace: repo, model: 'gpt-99' }), /model/],
    ['priority out of range', (repo) => ({ objective: 'x', workspace: repo, priority: 101 }), /priority/],
  ];
  for (const [name, input, pattern] of bad) {
    it(name, async () => {
      const before = counts();
      await expect(h.call('delegate_task', input(h.repo))).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(pattern) });
      expect(counts()).toEqual(before);
    });
  }

  it('accepts a subdirectory of a repository', async () => {
    mkdirSync(join(h.repo, 'src'));
    const r = await h.call('delegate_task', { objective: 'x', workspace: join(h.repo, 'src') });
    expect(r.task.status).toBe('queued');
  });

  it('rejects a cyclic batch whole', async () => {
    const before = counts();
    const tasks = [
      { ref: 'a', objective: 'a', workspace: h.repo, depends_on: ['c'] },
      { ref: 'b', objective: 'b', workspace: h.repo, depends_on: ['a'] },
      { ref: 'c', objective: 'c', workspace: h.repo, depends_on: ['b'] },
      { ref: 'd', objective: 'd', workspace: h.repo },
    ];
    await expect(h.call('delegate_batch', { tasks })).rejects.toMatchObject({ code: 'invalid_input', message: expect.stringMatching(/cycle/) });
    expect(counts()).toEqual(before);
  });

  it('inserts a batch with refs as one tree, dependencies resolved', async () => {
    const r = await h.call('delegate_batch', {
      tasks: [
        { ref: 'test', objective: 'run tests', workspace: h.repo, depends_on: ['build'] },
        { ref: 'build', objective: 'build', workspace: h.repo },
      ],
    });
    const [test, build] = r.tasks;
    expect(test.dependsOn).toEqual([build.id]);
    expect(test.rootId).toBe(build.rootId);
    expect(build.rootId).toBe(build.id);
  });

  it('workflow types pre-fill priority and timeout; explicit values win', async () => {
    const hot = (await h.call('delegate_task', { objective: 'x', workspace: h.repo, type: 'hotfix' })).task;
    expect([hot.priority, hot.timeoutS]).toEqual([90, 1800]);
    const chore = (await h.call('delegate_task', { objective: 'x', workspace: h.repo, type: 'chore', priority: 10 })).task;
    expect([chore.priority, chore.timeoutS]).toEqual([10, 900]);
  });
});

describe('secrets', () => {
  it('never reach the database or events, while the runner-side task keeps the original', async () => {
    const objective = SECRET_CORPUS.map((c) => c.text).join('\n');
    const r = await h.call('delegate_task', {
      objective,
      workspace: h.repo,
      verify: [['curl', '-H', 'Authorization: Bearer abc.def-ghi_jkl0123456789']],
      metadata: { env: 'password=CorrectHorse42' },
    });
    // SQLite: the file's bytes (free pages, WAL); PostgreSQL: every table's rows.
    const dump = storedText(h);
    expect(dump).toContain('[REDACTED]');
    for (const c of SECRET_CORPUS) expect(dump, c.name).not.toContain(c.secret);
    const stored = getTask(h.engine.db, r.task.id)!;
    expect(stored.objective).toContain('[REDACTED]');
    const real = unsealTask(h.engine.db, h.engine.home.root, stored);
    expect(real.objective).toBe(objective);
    expect(real.verify[0]).toEqual(['curl', '-H', 'Authorization: Bearer abc.def-ghi_jkl0123456789']);
    expect(real.metadata).toEqual({ env: 'password=CorrectHorse42' });
  });
});
