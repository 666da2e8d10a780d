#!/usr/bin/env node
// The `mock` worker: a deterministic fake agent CLI, scripted by the task's metadata.mock (see mock.ts).
// Plain JavaScript with no dependencies so it starts fast and runs anywhere Node runs.
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
};
// The objective and prompt come as JSON on stdin (`--objective` / `--prompt` when run by hand).
const input = (() => {
  try {
    return JSON.parse(readFileSync(0, 'utf8') || '{}');
  } catch {
    return {};
  }
})();
const spec = JSON.parse(opt('--spec') ?? '{}');
const prompt = input.prompt ?? opt('--prompt') ?? '';
const resume = opt('--resume');
const session = resume ?? `mock-${process.pid}-${Date.now().toString(36)}`;
const followup = Boolean(resume);
const kindArg = opt('--kind') ?? 'explore';
const modelArg = opt('--model');
// Layers, later ones win: the base spec, by_kind[kind], by_model[model], the first `when` whose
// prompt_includes is in the prompt, then `followup` on a resumed turn. One spec scripts a whole team.
const layer = (base, over) => (over ? { ...base, ...over } : base);
let step = layer(layer(spec, spec.by_kind?.[kindArg]), modelArg ? spec.by_model?.[modelArg] : undefined);
const when = (step.when ?? []).find((w) => prompt.includes(String(w.prompt_includes)));
step = layer(step, when);
if (followup) step = layer(step, step.followup);
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (step.ignore_sigterm) process.on('SIGTERM', () => {});
if (step.prompt_log) appendFileSync(step.prompt_log, JSON.stringify({ session, resumed: followup, prompt }) + '\n');
if (step.beat_log) {
  // A side log of when this attempt was alive: a line every 50 ms (task, attempt, pid, wall clock). Two
  // attempts of one task overlapped when one's beats reach past the other's first.
  const beat = () => appendFileSync(step.beat_log, `${process.env.LIGHTWORKER_TASK_ID ?? '?'} ${process.env.LIGHTWORKER_ATTEMPT ?? '?'} ${process.pid} ${Date.now()}\n`);
  beat();
  setInterval(beat, 50).unref();
}
if (step.tick_ms) {
  // A message event every tick_ms while alive, naming its attempt: whose output reached the task's log.
  let n = 0;
  setInterval(() => emit({ type: 'message', text: `tick ${process.env.LIGHTWORKER_ATTEMPT ?? '?'} ${++n}` }), step.tick_ms).unref();
}
if (step.append_log) appendFileSync(step.append_log, `${process.env.LIGHTWORKER_TASK_ID ?? '?'} ${process.env.LIGHTWORKER_ATTEMPT ?? '?'} ${process.pid}\n`);

emit({ type: 'start', session, model: step.model ?? 'mock-model', followup });
if (step.grandchild) {
  // A grandchild that ignores SIGTERM: only a tree kill with SIGKILL ends it.
  const gc = spawn(process.execPath, ['-e', "process.on('SIGTERM',()=>{}); setInterval(()=>{}, 1000)"], { stdio: 'ignore' });
  emit({ type: 'tool', name: 'spawn', status: 'completed', output: String(gc.pid) });
  if (step.grandchild_pidfile) writeFileSync(step.grandchild_pidfile, String(gc.pid));
}
if (step.background) {
  // A background child holding our stdout and stderr, like an agent's `npm run dev &`: it outlives us.
  const bg = spawn(process.execPath, ['-e', 'setInterval(()=>{}, 1000)'], { stdio: ['ignore', 'inherit', 'inherit'] });
  emit({ type: 'tool', name: 'background', status: 'completed', output: String(bg.pid) });
  if (step.background_pidfile) writeFileSync(step.background_pidfile, String(bg.pid));
}
if (step.escape) {
  // An escaped descendant: its own session (setsid), so it leaves our process group, ignores SIGTERM and
  // is re-parented to init when we exit. Only the marker in its environment says whose it is.
  const esc = spawn(process.execPath, ['-e', "process.on('SIGTERM',()=>{}); setInterval(()=>{}, 1000)"], { stdio: 'ignore', detached: true });
  esc.unref();
  emit({ type: 'tool', name: 'escape', status: 'completed', output: String(esc.pid) });
  if (step.escape_pidfile) writeFileSync(step.escape_pidfile, String(esc.pid));
}
if (step.message !== undefined) emit({ type: 'message', text: String(step.message) });
else emit({ type: 'message', text: `mock received ${prompt.length} prompt bytes` });
for (const e of step.events ?? []) emit(e);
for (const [path, body] of Object.entries(step.write_files ?? {})) {
  const full = isAbsolute(path) ? path : join(process.cwd(), path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, String(body));
  emit({ type: 'tool', name: 'write', status: 'completed', input: { path } });
}
if (step.output_mb) {
  const line = JSON.stringify({ type: 'noise', text: 'x'.repeat(1000) }) + '\n';
  const total = step.output_mb * 1024 * 1024;
  for (let sent = 0; sent < total; sent += line.length) {
    if (!process.stdout.write(line)) await new Promise((r) => process.stdout.once('drain', r));
  }
}
if (step.sleep_ms) await sleep(step.sleep_ms);
// Held until a file exists: a test decides when the turn ends (after it cut the store, say).
if (step.wait_file) while (!existsSync(step.wait_file)) await sleep(20);
const usage = step.usage ?? { input: Math.ceil(prompt.length / 4), cached: 0, output: 10 };
emit({ type: 'usage', input: usage.input, cached: usage.cached, output: usage.output, model: step.model ?? 'mock-model' });
if (step.rate_limit) {
  emit({ type: 'error', message: '429 Too Many Requests: rate limit exceeded' });
  process.exit(1);
}
if (step.fail_message) {
  emit({ type: 'error', message: step.fail_message });
  process.exit(step.exit_code ?? 1);
}
// By default a schema-valid answer for the task's kind.
const kind = kindArg;
const summary = `mock completed ${kind} task`;
const objective = (input.objective ?? opt('--objective') ?? 'the goal').trim();
const step1 = { id: 't1', title: `survey: ${objective.slice(0, 60)}`, kind: 'explore', objective: `Survey the repository for: ${objective}`, depends_on: [], profile: null, success_criteria: [], verify: [] };
const step2 = { ...step1, id: 't2', title: `report: ${objective.slice(0, 60)}`, objective: `Report how to do: ${objective}`, depends_on: ['t1'] };
const defaults = {
  // A plan needs at least one task: a goal with the default mock worker gets a small, runnable DAG.
  plan: { summary: `mock plan for: ${objective.slice(0, 200)}`, tasks: [step1, step2] },
  explore: { summary, findings: [] },
  review: { summary, verdict: 'approve', issues: [] },
  execute: { summary, files_changed: Object.keys(step.write_files ?? {}), notes: null },
};
const final = step.result !== undefined ? JSON.stringify(step.result) : step.text ?? JSON.stringify(defaults[kind] ?? { summary });
emit({ type: 'final', text: final });
process.exit(step.exit_code ?? 0);
