import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, methods, ndJsonStream, PROTOCOL_VERSION, type ClientConnection, type InitializeRequest, type InitializeResponse } from '@agentclientprotocol/sdk';
import { RATE_LIMIT_PATTERN, type NormalizedEvent } from '../adapter.js';
import { descendantsIn, listProcesses } from '../../platform/proc/process.js';
import { Boundary, type PathMatcher } from './boundary.js';
import { PermissionBridge, type AskedToolCall, type PermissionAnswer } from './permission-bridge.js';
import type { DriverLine, DriverSpec } from './spec.js';
import { UpdateMapper, usageOfResponse } from './updates.js';

/**
 * The ACP worker's process (out/main/acp-driver.js, entry main/cli/acp-driver-entry.ts): the client side of one Agent Client Protocol turn.
 * The runner spawns it like any worker CLI and reads its stdout as JSON lines (normalized events); it
 * spawns the agent in the driver's process group (the runner's sweep of the tree reaches both), speaks ACP to it over
 * stdio, serves fs/terminal inside the task's boundary, sends permission asks to LightWorker, and on
 * SIGTERM (cancel, timeout) sends session/cancel before it goes. `--probe CMD ARGS…` only initializes
 * the agent and prints its capabilities (what `workers`/`doctor` show; no session, no model call).
 */

const print = (line: DriverLine) => process.stdout.write(`${JSON.stringify(line)}\n`);

function startAgent(command: string, args: string[], env: Record<string, string>, cwd: string) {
  const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.on('error', () => undefined);
  child.on('error', (err) => {
    print({ type: 'acp.error', message: `cannot start the agent ${command}: ${err.message}`, rateLimited: false });
    process.exit(1);
  });
  const stream = ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
  return { child, stream };
}

const initializeRequest = (serveReads = true): InitializeRequest => ({
  protocolVersion: PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: serveReads, writeTextFile: true }, terminal: true },
  clientInfo: { name: 'lightworker', title: 'LightWorker', version: '1' },
});

async function probe(argv: string[]): Promise<void> {
  const { child, stream } = startAgent(argv[0], argv.slice(1), process.env as Record<string, string>, process.cwd());
  const conn = client({ name: 'lightworker' }).connect(stream);
  const timer = setTimeout(() => (print({ type: 'acp.error', message: 'no initialize answer', rateLimited: false }), child.kill('SIGKILL'), process.exit(1)), 20_000);
  child.on('exit', (code) => (print({ type: 'acp.error', message: `agent exited with code ${code} before initialize`, rateLimited: false }), process.exit(1)));
  try {
    const init = (await conn.agent.request(methods.agent.initialize, initializeRequest())) as InitializeResponse;
    // One short line (the probe keeps the first 200 characters): ACP version, load/resume, auth method ids.
    const caps = (init.agentCapabilities ?? {}) as { loadSession?: boolean; sessionCapabilities?: { resume?: unknown } };
    const auth = (init.authMethods ?? []).map((m) => m.id).join(',').slice(0, 120);
    process.stdout.write(`${JSON.stringify({ v: init.protocolVersion, load: Boolean(caps.loadSession), resume: Boolean(caps.sessionCapabilities?.resume), auth })}\n`);
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
    process.exit(0);
  }
}

/** The earlier session's ask and answer, for agents that cannot reload a session (a fresh one then starts with them). */
function notesFile(spec: DriverSpec): string {
  return join(spec.runDir, 'acp-session.json');
}

function carriedPrompt(spec: DriverSpec): string {
  const file = notesFile(spec);
  if (!spec.resumeSessionId || !existsSync(file)) return spec.prompt;
  const notes = JSON.parse(readFileSync(file, 'utf8')) as { sessionId: string; asked: string; answer: string | null };
  return `This continues an earlier session of this task (${notes.sessionId}) that this agent cannot reload.\nWhat you were asked then:\n${notes.asked.slice(0, 8000)}\n\nYour answer then:\n${(notes.answer ?? '(none)').slice(0, 8000)}\n\nNow:\n${spec.prompt}`;
}

async function runTurn(spec: DriverSpec, matchAny: PathMatcher): Promise<number> {
  const emit = (e: NormalizedEvent) => print(e);
  const mapper = new UpdateMapper(emit);
  const boundary = new Boundary(spec.cwd, spec.sandbox === 'read-only', spec.allowedPaths, spec.agent.env, (what, why) => emit({ type: 'worker.warning', message: `LightWorker refused the agent's ${what}: ${why}` }), matchAny);
  const bridge = spec.permission ? new PermissionBridge(spec.permission) : null;
  let sessionId: string | null = null;
  let replaying = false;
  let lastUpdateAt = 0;
  let interrupted = false;
  let stopping = false;
  /** Asks refused this turn by policy (not a person's pending decision): what the agent is told if the refusal ended its turn. */
  const refusals: string[] = [];
  let conn: ClientConnection | null = null;

  const app = client({ name: 'lightworker' })
    .onNotification(methods.client.session.update, ({ params }) => {
      lastUpdateAt = Date.now();
      if (!replaying) mapper.update(params.update as unknown as Record<string, unknown>);
    })
    .onRequest(methods.client.fs.readTextFile, ({ params }) => boundary.readTextFile(params))
    .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
      const r = boundary.writeTextFile(params);
      emit({ type: 'worker.tool', name: 'fs/write_text_file', status: 'completed', input: { path: params.path } });
      return r;
    })
    .onRequest(methods.client.terminal.create, ({ params }) => boundary.createTerminal(params))
    .onRequest(methods.client.terminal.output, ({ params }) => boundary.terminal(params.terminalId).snapshot())
    .onRequest(methods.client.terminal.waitForExit, ({ params }) => boundary.terminal(params.terminalId).waitForExit())
    .onRequest(methods.client.terminal.kill, ({ params }) => (boundary.terminal(params.terminalId).kill(), {}))
    .onRequest(methods.client.terminal.release, ({ params }) => boundary.releaseTerminal(params.terminalId))
    .onRequest(methods.client.session.requestPermission, async ({ params }) => {
      mapper.flush();
      const call = params.toolCall as AskedToolCall;
      const pick = (kinds: string[]) => params.options.find((o) => kinds.includes(o.kind))?.optionId;
      const answer: PermissionAnswer = bridge
        ? await bridge.decide(call).catch((err: Error) => ({ behavior: 'deny' as const, message: `LightWorker's permission tool failed: ${err.message}` }))
        : { behavior: 'deny', message: 'LightWorker: nothing is granted automatically and no permission tool serves this turn' };
      emit({ type: 'worker.tool', name: `permission: ${call.title ?? call.kind ?? 'tool'}`, status: answer.behavior === 'allow' ? 'completed' : 'failed', input: call.rawInput, output: answer.behavior === 'allow' ? 'allowed' : answer.message });
      if (answer.behavior === 'allow') {
        const id = pick(['allow_once']) ?? pick(['allow_always']);
        if (id) return { outcome: { outcome: 'selected', optionId: id } };
      }
      if (answer.behavior === 'deny' && answer.interrupt && sessionId && conn) {
        // A person decides: end this turn; the answer continues the same session.
        interrupted = true;
        void conn.agent.notify(methods.agent.session.cancel, { sessionId });
        return { outcome: { outcome: 'cancelled' } };
      }
      if (answer.behavior === 'deny') refusals.push(answer.message);
      const id = pick(['reject_once']) ?? pick(['reject_always']);
      return id ? { outcome: { outcome: 'selected', optionId: id } } : { outcome: { outcome: 'cancelled' } };
    });

  const { child, stream } = startAgent(spec.agent.command, spec.agent.args, spec.agent.env, spec.cwd);
  const agentExit = new Promise<number>((res) => child.on('exit', (code, sig) => res(code ?? (sig ? 128 : 1))));
  conn = app.connect(stream);
  const c = conn;
  const stop = async () => {
    stopping = true;
    if (sessionId) await c.agent.notify(methods.agent.session.cancel, { sessionId }).catch(() => undefined);
    emit({ type: 'worker.warning', message: 'stopped: session/cancel sent to the agent' });
    setTimeout(() => process.exit(143), 1500).unref();
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());

  const fail = (message: string) => {
    mapper.flush();
    print({ type: 'acp.error', message, rateLimited: RATE_LIMIT_PATTERN.test(message) });
    return 1;
  };
  const work = (async (): Promise<number> => {
    const init = (await c.agent.request(methods.agent.initialize, initializeRequest(spec.serveReads))) as InitializeResponse;
    const caps = (init.agentCapabilities ?? {}) as Record<string, unknown>;
    const sessionCaps = (caps.sessionCapabilities ?? {}) as Record<string, unknown>;
    let prompt = spec.prompt;
    let modes: { availableModes?: { id: string }[] } | null | undefined;
    let loadFailed: string | null = null;
    const canLoad = Boolean(caps.loadSession) && spec.loadSession !== false;
    if (spec.resumeSessionId && canLoad) {
      replaying = true;
      try {
        const r = await c.agent.request(methods.agent.session.load, { sessionId: spec.resumeSessionId, cwd: spec.cwd, mcpServers: [] });
        sessionId = spec.resumeSessionId;
        modes = r?.modes;
        // Some agents (Gemini CLI) stream the loaded history after answering session/load: it is over once they go quiet.
        lastUpdateAt = Date.now();
        await quietFor(() => lastUpdateAt, 400, 5000);
      } catch (err) {
        // A saved session the agent cannot find or read: go on in a fresh one.
        loadFailed = `${(err as Error).message} ${JSON.stringify((err as { data?: unknown }).data ?? '')}`.slice(0, 300);
      }
      replaying = false;
    }
    if (!sessionId && spec.resumeSessionId && !loadFailed && !canLoad && spec.loadSession !== false && sessionCaps.resume) {
      const r = await c.agent.request<{ modes?: typeof modes }>(methods.agent.session.resume, { sessionId: spec.resumeSessionId, cwd: spec.cwd, mcpServers: [] });
      sessionId = spec.resumeSessionId;
      modes = r?.modes;
    } else if (!sessionId) {
      if (loadFailed) emit({ type: 'worker.warning', message: `session/load of ${spec.resumeSessionId} failed: ${loadFailed}` });
      const r = await c.agent.request(methods.agent.session.new, { cwd: spec.cwd, mcpServers: [] });
      sessionId = r.sessionId;
      modes = r.modes;
      prompt = carriedPrompt(spec);
      if (spec.resumeSessionId) emit({ type: 'worker.warning', message: `the agent cannot reload session ${spec.resumeSessionId}: a new session ${sessionId} continues with the earlier ask and answer` });
    }
    emit({ type: 'worker.started', sessionId, model: spec.model });
    const mode = spec.modes.find((m) => modes?.availableModes?.some((a) => a.id === m));
    if (mode) await c.agent.request(methods.agent.session.setMode, { sessionId, modeId: mode });
    // Gemini CLI says "[MODE_UPDATE] autoEdit" as a message chunk: not part of the turn's answer.
    mapper.reset();
    const ask = async (text: string) => (await c.agent.request(methods.agent.session.prompt, { sessionId: sessionId!, prompt: [{ type: 'text', text }] })) as unknown as Record<string, unknown>;
    let res = await ask(prompt);
    // codex-acp offers only "abort" as a refusal: a refused ask ends its turn. The same session goes on, told why.
    for (let round = 0; res.stopReason === 'cancelled' && refusals.length && !interrupted && !stopping && round < 3; round++) {
      mapper.flush();
      const why = refusals.splice(0).join('; ');
      emit({ type: 'worker.warning', message: `the agent ended its turn on a refused request; it continues in the same session, told: ${why}` });
      res = await ask(`LightWorker refused that request: ${why}\nDo not ask for it again; go on with the task without it.`);
    }
    mapper.flush();
    const usage = usageOfResponse(res, spec.model, mapper.costUsd, mapper.stepUsage);
    if (usage) emit(usage);
    writeFileSync(notesFile(spec), JSON.stringify({ sessionId, asked: prompt, answer: mapper.lastMessage }), { mode: 0o600 });
    const stopReason = String(res.stopReason);
    print({ type: 'acp.end', sessionId, stopReason, text: mapper.lastMessage, interrupted });
    return stopReason === 'end_turn' || interrupted ? 0 : 1;
  })();
  try {
    let ended = false;
    const code = await Promise.race([work.finally(() => (ended = true)), agentExit.then((n) => (ended ? 0 : fail(`the agent exited with code ${n} before the turn ended`)))]);
    ended = true;
    return code;
  } catch (err) {
    const e = err as { message?: string; data?: unknown };
    return fail(`${e.message ?? String(err)}${e.data ? ` ${JSON.stringify(e.data).slice(0, 1000)}` : ''}`);
  } finally {
    boundary.close();
    await bridge?.close();
    // Stdin closed, the agent ends on its own and saves its session (a follow-up loads it); then it is stopped.
    if (spec.settleMs && !stopping) await new Promise((r) => setTimeout(r, spec.settleMs).unref());
    // Taken before it ends: a launcher that exits leaves its own children behind (codex-acp's node wrapper
    // passes no signal to its native binary), and once orphaned they are no longer found below it.
    const procs = listProcesses();
    const tree = new Set(descendantsIn(procs, child.pid ?? -1).map((pid) => `${pid}:${procs.find((p) => p.pid === pid)?.start}`));
    child.stdin.end();
    await Promise.race([agentExit, new Promise((r) => setTimeout(r, 3000).unref())]);
    child.kill('SIGTERM');
    for (const p of listProcesses()) {
      if (!tree.has(`${p.pid}:${p.start}`)) continue;
      try {
        process.kill(p.pid, 'SIGTERM');
      } catch {
        // gone already
      }
    }
  }
}

/** Resolves once no update has come for `quietMs` (at most `maxMs` in all). */
async function quietFor(last: () => number, quietMs: number, maxMs: number): Promise<void> {
  const end = Date.now() + maxMs;
  for (;;) {
    const wait = Math.min(last() + quietMs, end) - Date.now();
    if (wait <= 0) return;
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** The driver's process: a turn (spec on stdin) or `--probe CMD ARGS…`. */
export async function runAcpDriver(matchAny: PathMatcher): Promise<void> {
  if (process.argv[2] === '--probe') return probe(process.argv.slice(3));
  const chunks: Buffer[] = [];
  for await (const b of process.stdin) chunks.push(b as Buffer);
  const spec = JSON.parse(Buffer.concat(chunks).toString('utf8')) as DriverSpec;
  process.exit(await runTurn(spec, matchAny));
}

/** The end of a driver that failed: one error line the adapter reports. */
export function reportDriverFailure(err: unknown): void {
  print({ type: 'acp.error', message: `LightWorker's ACP driver failed: ${(err as Error).stack ?? String(err)}`, rateLimited: false });
  process.exit(1);
}
