import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../core/errors.js';
import { RATE_LIMIT_PATTERN, type NormalizedEvent, type StreamParser, type WorkerAdapter, type WorkerInfo, type WorkerTurn } from './adapter.js';
import { probeVersionLine } from './probe.js';
import { findOnPath } from './which.js';

export interface LinkedWorkerSpec {
  name: string;
  /**
   * argv template; `{prompt_file}`, `{workdir}` and `{session}` are replaced per turn (whole-argument or
   * inline). Without `{prompt_file}` or `{prompt}` the prompt is written to the CLI's stdin. `{prompt}`
   * (the prompt itself in argv, readable by every local user) still works, with a warning.
   */
  command: string[];
  /** argv template for follow-up turns; without it follow-ups start a fresh turn. */
  resume?: string[];
  maxConcurrency?: number;
  /**
   * argv that prints the CLI's version (`workers link --version-json`, `[workers.NAME] version`), run under
   * the probe rules (probe.ts). Without it nothing of the CLI is run to look at it: "version unknown".
   */
  version?: string[];
  /** `[workers.NAME] read_only_sandbox = true`: the user vouches the CLI enforces read-only (read-only tasks run in place). */
  readOnlySandbox?: boolean;
}

const PLACEHOLDER = /\{(prompt_file|prompt|workdir|session)\}/g;
const ANY_PLACEHOLDER = /\{(prompt_file|prompt|workdir|session)\}/;

/** The file `{prompt_file}` names: in the turn's private run folder, 0600, rewritten each turn. */
const PROMPT_FILE = 'linked-prompt.txt';

/** Does this link put the prompt itself in argv (`{prompt}`)? */
export function promptInArgv(spec: Pick<LinkedWorkerSpec, 'command' | 'resume'>): boolean {
  return [...spec.command, ...(spec.resume ?? [])].some((a) => a.includes('{prompt}'));
}

/** What a user is told about a link with `{prompt}`: every local user can read argv. */
export function promptInArgvWarning(name: string): string {
  return `worker ${name} gets the prompt (the task's objective) in its argv, which every local user can read (ps, /proc/<pid>/cmdline); use {prompt_file} (a private file) or no prompt placeholder (the prompt on stdin) if the CLI can read it that way`;
}

export function validateLinkedSpec(spec: LinkedWorkerSpec): void {
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(spec.name)) throw new AppError('invalid_input', `name: "${spec.name}" must be lowercase letters, digits, - or _`, { field: 'name' });
  if (!Array.isArray(spec.command) || spec.command.length === 0 || spec.command.some((a) => typeof a !== 'string')) {
    throw new AppError('invalid_input', 'command_json: must be a non-empty JSON array of strings', { field: 'command_json' });
  }
  if (ANY_PLACEHOLDER.test(spec.command[0])) throw new AppError('invalid_input', 'command_json: the executable itself cannot be a placeholder', { field: 'command_json' });
  if (spec.resume && (!spec.resume.length || !spec.resume.some((a) => a.includes('{session}')))) {
    throw new AppError('invalid_input', 'resume_json: must be a JSON array of strings containing {session}', { field: 'resume_json' });
  }
  if (spec.version !== undefined) {
    if (!Array.isArray(spec.version) || !spec.version.length || spec.version.some((a) => typeof a !== 'string' || !a)) {
      throw new AppError('invalid_input', 'version_json: must be a non-empty JSON array of non-empty strings, e.g. ["agent","--version"]', { field: 'version_json' });
    }
    // A version command is asked for a version, never given a turn's prompt, folder or session.
    const i = spec.version.findIndex((a) => ANY_PLACEHOLDER.test(a));
    if (i >= 0) throw new AppError('invalid_input', `version_json[${i}]: a version command takes no {prompt}, {workdir} or {session}`, { field: `version_json[${i}]` });
  }
}

/**
 * The keys a linked CLI receives (credentials.ts): with `auth = "env"` the variables named in
 * `[workers.NAME] keys`, with a gateway its key under its `key_env`; by default none (the CLI uses its
 * own config under your HOME).
 */
function linkedKeys(turn: WorkerTurn): Record<string, string> {
  if (turn.auth?.mode === 'env') return turn.auth.env;
  if (turn.auth?.mode === 'gateway' && turn.gateway?.key) return { [turn.gateway.keyEnv]: turn.gateway.key };
  return {};
}

function fill(template: string[], values: Record<string, string>): string[] {
  return template.map((a) => a.replace(PLACEHOLDER, (_, k: string) => values[k] ?? ''));
}

function writePromptFile(turn: WorkerTurn): string {
  mkdirSync(turn.runDir, { recursive: true, mode: 0o700 });
  const file = join(turn.runDir, PROMPT_FILE);
  rmSync(file, { force: true });
  writeFileSync(file, turn.prompt, { mode: 0o600, flag: 'wx' });
  return file;
}

/**
 * A CLI the user linked by argv template. Its stdout is taken line by line: a JSON line with a
 * `session_id`/`sessionId` records the session; other lines are messages; the final answer is the
 * last JSON object printed, or else all text (capped).
 */
export function linkedAdapter(spec: LinkedWorkerSpec): WorkerAdapter {
  return {
    name: spec.name,
    maxConcurrency: spec.maxConcurrency ?? 2,
    resumable: Boolean(spec.resume),
    confinesReadOnly: () => spec.readOnlySandbox === true,
    async detect(): Promise<WorkerInfo> {
      const bin = findOnPath(spec.command[0]);
      let version: string | null = null;
      let versionNote: string | undefined;
      if (bin) {
        // Only the command the link names for it, under the probe rules: the agent itself is never run
        // to look at it (a linked agent asked `--version` may well take that as a prompt and act).
        const versionBin = spec.version ? findOnPath(spec.version[0]) : null;
        const probe = !spec.version
          ? { line: null, unknown: 'the link names no version command (workers link NAME --version-json \'["agent","--version"]\')' }
          : versionBin
            ? await probeVersionLine(versionBin, spec.version.slice(1))
            : { line: null, unknown: `${spec.version[0]} (its version command) not found on PATH` };
        version = probe.line;
        if (!version) versionNote = `version unknown: ${probe.unknown}`;
      }
      return {
        name: spec.name,
        installed: Boolean(bin),
        version,
        ...(versionNote ? { versionNote } : {}),
        authenticated: null,
        capabilities: { sessions: Boolean(spec.resume), structuredOutput: false, sandboxModes: [] },
        reason: bin ? null : `${spec.command[0]} not found on PATH`,
        command: bin,
      };
    },
    async buildSpawn(turn: WorkerTurn) {
      const template = turn.resumeSessionId && spec.resume ? spec.resume : spec.command;
      const values = { prompt: turn.prompt, prompt_file: '', workdir: turn.workdir, session: turn.resumeSessionId ?? '' };
      const viaFile = template.some((a) => a.includes('{prompt_file}'));
      if (viaFile) values.prompt_file = writePromptFile(turn);
      const argv = fill(template, values);
      const viaArgv = template.some((a) => a.includes('{prompt}'));
      return {
        command: findOnPath(argv[0]) ?? argv[0], args: argv.slice(1), env: { ...turn.baseEnv, ...linkedKeys(turn) }, cwd: turn.workdir,
        ...(viaFile || viaArgv ? {} : { stdin: turn.prompt }),
        ...(viaArgv ? { warning: promptInArgvWarning(spec.name) } : {}),
      };
    },
    createParser(): StreamParser {
      let sessionId: string | null = null;
      let lastJson: string | null = null;
      const text: string[] = [];
      let textBytes = 0;
      let started = false;
      return {
        line(line: string): NormalizedEvent[] {
          const events: NormalizedEvent[] = [];
          let parsed: unknown;
          // Only a line that opens an object can be one: a throw per plain line is most of a flood's cost.
          if (line.trimStart()[0] === '{') {
            try {
              parsed = JSON.parse(line);
            } catch {
              parsed = undefined;
            }
          }
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
            const o = parsed as Record<string, unknown>;
            const sid = o.session_id ?? o.sessionId;
            if (typeof sid === 'string' && !started) {
              sessionId = sid;
              started = true;
              events.push({ type: 'worker.started', sessionId: sid });
            }
            lastJson = line;
          } else {
            if (textBytes < 256 * 1024) {
              text.push(line);
              textBytes += line.length;
            }
            events.push({ type: 'worker.message', text: line.slice(0, 4000) });
          }
          return events;
        },
        finish(exitCode, stderrTail) {
          const finalText = lastJson ?? (text.length ? text.join('\n') : null);
          if (exitCode === 0) return { ok: true, finalText, sessionId };
          const message = `${spec.name} exited with code ${exitCode}${stderrTail ? `: ${stderrTail.trim().slice(-500)}` : ''}`;
          return { ok: false, finalText, sessionId, error: { code: RATE_LIMIT_PATTERN.test(message) ? 'rate_limited' : 'worker_failed', message } };
        },
      };
    },
  };
}
