import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listTasks } from '../../main/store/tasks.js';
import { teamReport } from '../../main/orchestration/team-report.js';
import { startCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { until } from '../helpers/procs.js';
import { hitlHarness } from './hitl.helpers.js';

let h: TestHome;
beforeEach(() => {
  h = makeHome();
  h.configure('[scheduler]\nkill_grace_ms = 300\n');
});
afterEach(() => h.cleanup());

// The same reads and runs as the human-in-the-loop tests (follow-ups are what implement_review is built on).
const { task, events, cli, lines, runUntilIdle } = hitlHarness(() => h);
const git = (dir: string, args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();


async function startTeam(args: string[]): Promise<{ rootId: string; tasks: { id: string; name: string }[] }> {
  const r = await cli(['team', ...args, '--workspace', h.repo, '--mode', 'auto_execute', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

async function report(id: string): Promise<any> {
  const r = await cli(['team', 'show', id, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** The verify command every test uses: the file must hold the fixed text (a real check LightWorker runs). */
const checkFile = (file: string, text: string) => `grep -qx '${text}' ${file}`;

/**
 * Link a worker NAME that runs a small script: it appends {cwd, prompt} to `<root>/NAME.jsonl` and
 * prints the JSON answer `answer(prompt)` computes (JavaScript source of a function body).
 */
async function linkScript(name: string, answer: string): Promise<string> {
  const log = join(h.root, `${name}.jsonl`);
  const script = join(h.root, `${name}.mjs`);
  writeFileSync(
    script,
    `import { appendFileSync } from 'node:fs';
const prompt = process.argv[2];
appendFileSync(${JSON.stringify(log)}, JSON.stringify({ cwd: process.cwd(), prompt }) + '\\n');
const answer = (prompt) => { ${answer} };
console.log(JSON.stringify(answer(prompt)));
`,
  );
  const link = await cli(['workers', 'link', name, '--command-json', JSON.stringify([process.execPath, script, '{prompt}'])]);
  expect(link.code, link.stderr).toBe(0);
  return log;
}

const REQUEST_CHANGES = "return { summary: 'typo', verdict: 'request_changes', issues: [{ file: 'greet.txt', severity: 'high', message: 'spell it \"hello\"' }] };";

describe('implement_review', () => {
  it('sends the review findings back to the implementer, whose follow-up changes the diff, until the next review passes', async () => {
    const log = join(h.root, 'prompts.jsonl');
    // The reviewer asks for changes until the diff it is shown has the fix.
    const reviewLog = await linkScript('reviewer', `if (prompt.includes('+hello')) return { summary: 'good', verdict: 'approve', issues: [] }; ${REQUEST_CHANGES}`);
    // The implementer writes a first version; its follow-up turn (same session) fixes it.
    const mock = { prompt_log: log, write_files: { 'greet.txt': 'helo\n' }, followup: { write_files: { 'greet.txt': 'hello\n' } } };
    const t = await startTeam(['implement_review', '--workers', 'mock,reviewer', '--rounds', '3', '--verify', 'test -s greet.txt', '--metadata', JSON.stringify({ mock }), 'write a greeting to greet.txt']);
    expect(t.tasks).toHaveLength(2);
    await runUntilIdle();

    const r = await report(t.rootId);
    expect(r.state, JSON.stringify(r)).toBe('passed');
    const impl = task(r.members.find((m: any) => m.role === 'implement').id);
    expect(impl.status).toBe('completed');
    expect(impl.attempt).toBe(2);
    expect(readFileSync(join(impl.worktreePath!, 'greet.txt'), 'utf8')).toBe('hello\n');
    const reviews = r.members.filter((m: any) => m.role === 'review');
    expect(reviews.map((m: any) => [m.round, m.status, m.verdict])).toEqual([
      [1, 'completed', 'request_changes'],
      [2, 'completed', 'approve'],
    ]);
    // The implementer's second turn resumed its own session with the reviewer's finding as the message.
    const [first, second] = lines(log);
    expect(second).toMatchObject({ resumed: true, session: first.session });
    expect(second.prompt).toContain('spell it "hello"');
    // Each review ran read-only in the workspace and saw the diff under review and LightWorker's verification of it.
    const reviewPrompts = lines(reviewLog);
    expect(reviewPrompts).toHaveLength(2);
    // The reviewer reads the repository, not the implementer's worktree: a linked CLI (no enforced
    // read-only sandbox) reads it through a disposable snapshot of the checkout.
    expect(reviewPrompts[0].cwd.startsWith(join(h.home, 'snapshots') + '/')).toBe(true);
    expect(reviewPrompts[0].prompt).toMatch(/^\+helo$/m);
    expect(reviewPrompts[0].prompt).toContain('LightWorker verification: PASSED');
    expect(reviewPrompts[1].prompt).toMatch(/^\+hello$/m);
    expect(reviewPrompts[1].prompt).toContain('Findings of review round 1');
    // The whole loop is one tree, visible in `tree`.
    const tree = await cli(['tree', t.rootId]);
    expect(tree.stdout).toMatch(/completed +execute +implement_review: write a greeting/);
    expect(tree.stdout).toMatch(/completed +review +review 2\/3/);
    // accept_team takes the reviewed change; nothing reached the user's branch before.
    expect(existsSync(join(h.repo, 'greet.txt'))).toBe(false);
    const acc = await cli(['team', 'accept', t.rootId, '--json']);
    expect(acc.code, acc.stderr).toBe(0);
    expect(readFileSync(join(h.repo, 'greet.txt'), 'utf8')).toBe('hello\n');
  });

  it('ends with budget_spent when the reviewer still has findings after the last round', async () => {
    await linkScript('reviewer', REQUEST_CHANGES);
    const mock = { write_files: { 'greet.txt': 'one\n' }, followup: { write_files: { 'greet.txt': 'two\n' } } };
    const t = await startTeam(['implement_review', '--workers', 'mock,reviewer', '--rounds', '2', '--metadata', JSON.stringify({ mock }), 'write x']);
    await runUntilIdle();
    const r = await report(t.rootId);
    expect(r.state).toBe('budget_spent');
    expect(r.outcome).toMatchObject({ outcome: 'budget_spent', rounds: 2, budget: 2, openFindings: 1 });
    expect(r.members.filter((m: any) => m.role === 'review')).toHaveLength(2);
    expect(task(r.members[0].id).attempt).toBe(2);
    expect(r.acceptable).toBeNull();
    const acc = await cli(['team', 'accept', t.rootId]);
    expect(acc.code).toBe(1);
    expect(acc.stderr).toMatch(/budget_spent/);
  });

  it('a review without a valid verdict is reported as such, never as a clean review', async () => {
    // One reviewer answers in free text, the other with JSON whose verdict is outside the contract.
    const script = join(h.root, 'prose.mjs');
    writeFileSync(script, "console.log('Looks good to me, ship it!');\n");
    const link = await cli(['workers', 'link', 'prose', '--command-json', JSON.stringify([process.execPath, script, '{prompt}'])]);
    expect(link.code, link.stderr).toBe(0);
    await linkScript('lgtm', "return { summary: 'fine', verdict: 'lgtm', issues: [] };");
    for (const [reviewer, why] of [['prose', /free text/], ['lgtm', /verdict "lgtm" is not approve, request_changes or comment/]] as const) {
      const t = await startTeam(['implement_review', '--workers', `mock,${reviewer}`, '--rounds', '2', '--metadata', JSON.stringify({ mock: { write_files: { 'x.txt': 'x\n' } } }), 'write x']);
      await runUntilIdle();
      const r = await report(t.rootId);
      expect(r.state, JSON.stringify(r)).toBe('no_verdict');
      expect(r.outcome).toMatchObject({ outcome: 'no_verdict', reason: expect.stringMatching(why) });
      const review = r.members.find((m: any) => m.role === 'review');
      expect(review).toMatchObject({ status: 'completed', verdict: null, noVerdict: expect.stringMatching(why) });
      // Only the one review round: no guessed findings went back to the implementer.
      expect(r.members.filter((m: any) => m.role === 'review')).toHaveLength(1);
      expect(r.acceptable).toBeNull();
      const shown = await cli(['team', 'show', t.rootId]);
      expect(shown.stdout).toMatch(/state: no_verdict/);
      expect(shown.stdout).toMatch(/NO VALID VERDICT/);
      expect(shown.stdout).not.toMatch(/\blgtm\b\s*$/m);
    }
  });

  it('goes on after an ended team\'s implementer is retried: the blocked review is released and the loop finishes', async () => {
    await linkScript('reviewer', "return { summary: 'fine', verdict: 'approve', issues: [] };");
    const flag = join(h.root, 'flag');
    const t = await startTeam(['implement_review', '--workers', 'mock,reviewer', '--verify', `test -e ${flag}`, '--metadata', JSON.stringify({ mock: { write_files: { 'x.txt': 'x\n' } } }), 'write x']);
    await runUntilIdle();
    let r = await report(t.rootId);
    expect(r.state).toBe('implement_failed');
    expect(r.members.map((m: any) => m.status)).toEqual(['failed', 'blocked']);
    writeFileSync(flag, '');
    const retried = await cli(['retry', t.rootId]);
    expect(retried.code, retried.stderr).toBe(0);
    expect((await report(t.rootId)).state).toBe('running');
    await runUntilIdle();
    r = await report(t.rootId);
    expect(r.state, JSON.stringify(r)).toBe('passed');
    expect(r.members.map((m: any) => [m.role, m.status])).toEqual([['implement', 'completed'], ['review', 'completed']]);
    // An accept is no move: the team stays passed.
    expect((await cli(['team', 'accept', t.rootId])).code).toBe(0);
    expect((await report(t.rootId)).state).toBe('passed');
  });

  it('refuses a reviewer that is the implementer, naming the field, and creates nothing', async () => {
    const r = await cli(['team', 'implement_review', '--workers', 'mock,mock', '--workspace', h.repo, 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/workers: the reviewer must be another worker/);
    expect(listTasks(h.engine.db, {})).toHaveLength(0);
  });
});

describe('map_reduce', () => {
  it('runs the contributors, then a synthesizer whose prompt carries every contribution', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const mock = {
      prompt_log: log,
      when: [
        { prompt_includes: '# Team inputs', result: { summary: 'combined', findings: ['merged'] } },
        { prompt_includes: 'part 1 of 3', result: { summary: 'alpha findings', findings: ['A1'] } },
        { prompt_includes: 'part 2 of 3', result: { summary: 'beta findings', findings: ['B1'] } },
        { prompt_includes: 'part 3 of 3', result: { summary: 'gamma findings', findings: ['C1'] } },
      ],
    };
    const t = await startTeam(['map_reduce', '--workers', 'mock', '--part', 'look at alpha', '--part', 'look at beta', '--part', 'look at gamma', '--metadata', JSON.stringify({ mock }), 'survey the code']);
    expect(t.tasks).toHaveLength(4);
    const synth = task(t.tasks[3].id);
    expect(synth.dependsOn).toEqual(t.tasks.slice(0, 3).map((x) => x.id));
    await runUntilIdle();
    const r = await report(t.rootId);
    expect(r.state).toBe('completed');
    expect(task(synth.id).result).toMatchObject({ summary: 'combined' });
    const synthPrompt = lines(log).find((p: any) => p.prompt.includes('# Team inputs')).prompt as string;
    for (const s of ['alpha findings', 'beta findings', 'gamma findings']) expect(synthPrompt).toContain(s);
    expect(synthPrompt).toContain('Contribution 3 of 3');
  });
});

describe('map_reduce with execute contributors', () => {
  it('gives the synthesizer every contributor\'s diff and verification; it writes one change in its own worktree', async () => {
    const log = join(h.root, 'prompts.jsonl');
    const mock = {
      prompt_log: log,
      when: [
        { prompt_includes: '# Team inputs', write_files: { 'all.txt': 'alpha\nbeta\n' } },
        { prompt_includes: 'part 1 of 2', write_files: { 'alpha.txt': 'alpha\n' } },
        { prompt_includes: 'part 2 of 2', write_files: { 'beta.txt': 'beta\n' } },
      ],
    };
    const t = await startTeam(['map_reduce', '--workers', 'mock', '--contribute', 'execute', '--part', 'write alpha', '--part', 'write beta', '--verify', 'test -n "$(ls *.txt)"', '--metadata', JSON.stringify({ mock }), 'write the words']);
    await runUntilIdle();
    const r = await report(t.rootId);
    expect(r.state, JSON.stringify(r)).toBe('completed');
    const synth = task(t.tasks[2].id);
    expect(r.acceptable).toBe(synth.id);
    expect(readFileSync(join(synth.worktreePath!, 'all.txt'), 'utf8')).toBe('alpha\nbeta\n');
    expect(existsSync(join(synth.worktreePath!, 'alpha.txt'))).toBe(false);
    const p = lines(log).find((x: any) => x.prompt.includes('# Team inputs')).prompt as string;
    expect(p).toMatch(/^\+alpha$/m);
    expect(p).toMatch(/^\+beta$/m);
    expect(p.match(/LightWorker verification: PASSED/g)).toHaveLength(2);
  });
});

describe('bad team input', () => {
  it('names the field, exits 2 and creates nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['map_reduce', '--workers', 'a,b,c,d,e,f,g', 'x'], /workers: .*(6|too big|at most)/i],
      [['best_of_n', '--workers', 'mock,mock', 'x'], /workers: lists a candidate twice/],
      [['best_of_n', '--workers', 'mock,codex', '--judge', 'codex', 'x'], /judge: "codex" is one of the candidates/],
      [['best_of_n', '--workers', 'mock,codex', '--judge', 'nosuch', 'x'], /judge: unknown worker "nosuch"/],
      [['implement_review', '--workers', 'mock,reviewer', '--rounds', '9', 'x'], /rounds: /],
      // The team's own field, not the member task it would have become (`tasks[1].worker`).
      [['implement_review', '--workers', 'mock,nosuch', 'x'], /error: workers: unknown worker "nosuch"/],
      [['map_reduce', '--workers', 'mock,nosuch', 'x'], /error: workers: unknown worker "nosuch"/],
      [['map_reduce', '--workers', 'mock', '--synthesizer', 'nosuch', 'x'], /error: synthesizer: unknown worker "nosuch"/],
      [['integrate', '01ARZ3NDEKTSV4RRFFQ69G5FAV', '01ARZ3NDEKTSV4RRFFQ69G5FAW'], /error: sources\[0\]: no task 01ARZ3NDEKTSV4RRFFQ69G5FAV/],
    ];
    for (const [args, re] of cases) {
      const r = await cli(['team', ...args, '--workspace', h.repo]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(re);
    }
    expect(listTasks(h.engine.db, {})).toHaveLength(0);
  });
});

describe('best_of_n', () => {
  const candidates = {
    // gpt-5.5: a correct change with a large diff; gpt-5.5-mini: correct and small; claude-haiku-4-5: fails verification.
    'gpt-5.5': { write_files: { 'out.txt': 'ok\n', 'extra1.txt': 'a\nb\nc\n', 'extra2.txt': 'd\ne\n' } },
    'gpt-5.5-mini': { write_files: { 'out.txt': 'ok\n' } },
    'claude-haiku-4-5': { write_files: { 'out.txt': 'wrong\n' } },
  };
  const workers = 'mock:gpt-5.5,mock:gpt-5.5-mini,mock:claude-haiku-4-5';

  it('ranks by the rule (verified first, then the smallest diff) and accept takes the winner', async () => {
    const t = await startTeam(['best_of_n', '--workers', workers, '--verify', checkFile('out.txt', 'ok'), '--metadata', JSON.stringify({ mock: { by_model: candidates } }), 'write ok to out.txt']);
    expect(t.tasks).toHaveLength(3);
    await runUntilIdle();
    const [big, small, wrong] = t.tasks.map((x) => x.id);
    expect(task(wrong).status).toBe('failed');
    const r = await report(t.rootId);
    expect(r.state).toBe('ranked');
    expect(r.outcome).toMatchObject({ ranking: [small, big, wrong], winner: small, by: 'rule' });
    expect(r.acceptable).toBe(small);
    const acc = await cli(['team', 'accept', big, '--json']);
    expect(acc.code, acc.stderr).toBe(0);
    expect(JSON.parse(acc.stdout).accepted).toBe(small);
    expect(readFileSync(join(h.repo, 'out.txt'), 'utf8')).toBe('ok\n');
    expect(existsSync(join(h.repo, 'extra1.txt'))).toBe(false);
  });

  it('lets a worker judge rank the verified candidates from their diffs', async () => {
    // The judge names the candidates in the order it was shown them: the bigger change first, unlike the rule.
    const log = await linkScript('judge', "return { summary: 'in the order shown', findings: [...prompt.matchAll(/— task ([0-9A-Z]{26})/g)].map((m) => m[1]) };");
    const t = await startTeam(['best_of_n', '--workers', workers, '--judge', 'judge', '--verify', checkFile('out.txt', 'ok'), '--metadata', JSON.stringify({ mock: { by_model: candidates } }), 'write ok to out.txt']);
    const [big, small, wrong] = t.tasks.map((x) => x.id);
    await runUntilIdle();
    const r = await report(t.rootId);
    const judgeTask = r.members.find((m: any) => m.role === 'judge');
    expect(judgeTask, JSON.stringify(r)).toBeTruthy();
    expect(task(judgeTask.id).dependsOn.sort()).toEqual([big, small].sort());
    expect(r.outcome).toMatchObject({ ranking: [big, small, wrong], winner: big, by: `judge ${judgeTask.id}` });
    expect(r.acceptable).toBe(big);
    const judgePrompt = lines(log)[0].prompt as string;
    expect(judgePrompt).toContain(`task ${big}`);
    expect(judgePrompt).toMatch(/^\+d$/m);
    expect(judgePrompt).toContain('LightWorker verification: PASSED');
    expect(judgePrompt).not.toContain(`task ${wrong}`);
  });
});

describe('team cancel', () => {
  it('cancels every member that has not ended (running ones are killed) and the team ends with no winner', async () => {
    const t = await startTeam(['best_of_n', '--workers', 'mock:gpt-5.5,mock:gpt-5.5-mini,mock:claude-haiku-4-5', '--metadata', JSON.stringify({ mock: { sleep_ms: 60_000 } }), 'take your time']);
    const ids = t.tasks.map((x) => x.id);
    const runner = startCli(['run'], { home: h.home });
    const exited = new Promise((r) => runner.once('exit', r));
    try {
      await until(() => ids.some((id) => task(id).status === 'running'), 60_000, 'a candidate to run');
      const r = await cli(['team', 'cancel', ids[2], '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).cancelled.sort()).toEqual([...ids].sort());
      await until(() => ids.every((id) => task(id).status === 'cancelled'), 60_000, 'every candidate cancelled');
      await until(() => teamReport(h.engine.db, ids[0]).state === 'no_candidate_completed', 60_000, 'the team to end');
      expect((await cli(['team', 'cancel', ids[0], '--json'])).stdout).toContain('"cancelled": []');
    } finally {
      runner.kill('SIGTERM');
      await exited;
    }
  });
});

describe('integrate', () => {
  async function executeTask(files: Record<string, string>, verify?: string): Promise<string> {
    const r = await h.call('delegate_task', { objective: `write ${Object.keys(files).join(', ')}`, workspace: h.repo, kind: 'execute', mode: 'auto_execute', verify: verify ? [verify] : [], metadata: { mock: { write_files: files } } });
    return r.task.id;
  }

  it('merges verified task commits onto one new branch, verifies it, and touches the user branch only on accept', async () => {
    const a = await executeTask({ 'a.txt': 'A\n' }, 'test -f a.txt');
    const b = await executeTask({ 'b.txt': 'B\n' }, 'test -f b.txt');
    const before = git(h.repo, ['rev-parse', 'HEAD']);
    const t = await startTeam(['integrate', a, b]);
    const id = t.tasks[0].id;
    // The root it names is the integration itself (its task tree is a source's), so `team show` takes it.
    expect(t.rootId).toBe(id);
    expect(task(id).verify).toEqual(['test -f a.txt', 'test -f b.txt']);
    await runUntilIdle();
    const it = task(id);
    expect(it.status, JSON.stringify(it.error)).toBe('completed');
    expect(readFileSync(join(it.worktreePath!, 'a.txt'), 'utf8')).toBe('A\n');
    expect(readFileSync(join(it.worktreePath!, 'b.txt'), 'utf8')).toBe('B\n');
    // The integration branch lives in the task's own repository until accept.
    expect(git(it.worktreePath!, ['log', '--format=%s', `${before}..${it.branch}`])).toMatch(new RegExp(`integrate ${b}[\\s\\S]*integrate ${a}`));
    expect(events(id, 'verify.completed').at(-1)!.payload.ok).toBe(true);
    expect(git(h.repo, ['rev-parse', 'HEAD'])).toBe(before);
    expect(existsSync(join(h.repo, 'a.txt'))).toBe(false);
    const r = await report(id);
    expect(r).toMatchObject({ rootId: id, state: 'completed', acceptable: id });
    expect(r.sources.map((s: any) => [s.id, s.status, /^[0-9a-f]{40}$/.test(s.merged)])).toEqual([[a, 'completed', true], [b, 'completed', true]]);
    const acc = await cli(['team', 'accept', id]);
    expect(acc.code, acc.stderr).toBe(0);
    expect(readFileSync(join(h.repo, 'b.txt'), 'utf8')).toBe('B\n');
  });

  it('reports a conflict per file and names the tasks that clash, leaving the user branch untouched', async () => {
    const a = await executeTask({ 'same.txt': 'from a\n', 'a-only.txt': 'a\n' });
    const b = await executeTask({ 'same.txt': 'from b\n' });
    const c = await executeTask({ 'c.txt': 'c\n' });
    const before = git(h.repo, ['rev-parse', 'HEAD']);
    const t = await startTeam(['integrate', a, b, c]);
    const id = t.tasks[0].id;
    await runUntilIdle();
    const it = task(id);
    expect(it.status).toBe('failed');
    expect(it.error!.code).toBe('merge_conflict');
    expect(it.error!.message).toContain(`same.txt: ${b} conflicts with ${a}`);
    const r = await report(id);
    expect(r.state).toBe('merge_conflict');
    expect(r.conflicts).toEqual([{ file: 'same.txt', source: b, clashesWith: [a] }]);
    expect(r.sources.map((s: any) => [s.id, s.merged !== null, s.conflicts])).toEqual([[a, true, []], [b, false, ['same.txt']], [c, true, []]]);
    expect((events(id, 'integrate.merged').at(-1)!.payload.merged as any[]).map((m) => m.source)).toEqual([a, c]);
    expect(git(h.repo, ['rev-parse', 'HEAD'])).toBe(before);
    expect(git(h.repo, ['status', '--porcelain'])).toBe('');
  });

  it('refuses a source that is not an execute task, naming the field, and creates nothing', async () => {
    const a = await executeTask({ 'a.txt': 'A\n' });
    const r0 = await h.call('delegate_task', { objective: 'look', workspace: h.repo, kind: 'explore' });
    const n = listTasks(h.engine.db, {}).length;
    const r = await cli(['team', 'integrate', a, r0.task.id]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sources\[1\]: .* explore task/);
    expect(listTasks(h.engine.db, {}).length).toBe(n);
  });
});

describe('handoff', () => {
  it('continues a failed task on another worker in the same worktree, with the last attempt summarized', async () => {
    const r0 = await h.call('delegate_task', {
      objective: 'write the parser',
      workspace: h.repo,
      kind: 'execute',
      mode: 'auto_execute',
      verify: [checkFile('parser.txt', 'done')],
      metadata: { mock: { message: 'I started the parser but ran out of ideas', write_files: { 'parser.txt': 'half\n', 'notes.txt': 'keep me\n' } } },
    });
    const id = r0.task.id as string;
    await runUntilIdle();
    expect(task(id).status).toBe('failed');
    const worktree = task(id).worktreePath!;
    const log = join(h.root, 'other.jsonl');
    const other = join(h.root, 'other.mjs');
    writeFileSync(
      other,
      `import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(log)}, JSON.stringify({ cwd: process.cwd(), prompt: process.argv[2], notes: readFileSync('notes.txt', 'utf8') }) + '\\n');
writeFileSync('parser.txt', 'done\\n');
console.log(JSON.stringify({ summary: 'finished the parser', files_changed: ['parser.txt'], notes: null }));
`,
    );
    expect((await cli(['workers', 'link', 'other', '--command-json', JSON.stringify([process.execPath, other, '{prompt}'])])).code).toBe(0);
    const bad = await cli(['team', 'handoff', id, '--worker', 'mock']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/worker: .*already runs on mock/);
    const r = await cli(['team', 'handoff', id, '--worker', 'other', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).task).toMatchObject({ id, worker: 'other', attempt: 2, status: 'queued' });
    await runUntilIdle();
    const t = task(id);
    expect(t.status, JSON.stringify(t.error)).toBe('completed');
    expect(t.worktreePath).toBe(worktree);
    const seen = lines(log)[0];
    expect(seen.cwd).toBe(worktree);
    expect(seen.notes).toBe('keep me\n');
    expect(seen.prompt).toContain('I started the parser but ran out of ideas');
    expect(seen.prompt).toMatch(/Files it changed .*parser\.txt/);
    expect(seen.prompt).toContain("LightWorker's verification: FAILED");
  });
});
