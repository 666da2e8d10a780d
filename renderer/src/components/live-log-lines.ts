import type { EventRow } from '../api/types.js';

/** One line of the live log, as a terminal would print it. */
export interface LogLine {
  seq: number;
  ts: number;
  /** What colours the line: the worker speaking, a tool call, its output, usage, a state change, the end. */
  kind: 'message' | 'tool' | 'output' | 'usage' | 'status' | 'done' | 'fail' | 'verify';
  text: string;
}

const MAX_OUTPUT_CHARS = 4000;

function clip(text: string, max = MAX_OUTPUT_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more chars]` : text;
}

/** A tool call's input in one line: the path or command when it has one, else compact JSON. */
function toolInput(input: unknown): string {
  if (input === undefined || input === null) return '';
  if (typeof input === 'string') return input;
  const o = input as Record<string, unknown>;
  for (const k of ['command', 'cmd', 'path', 'file_path', 'file', 'pattern', 'query', 'url']) {
    const v = o[k];
    if (typeof v === 'string') return v;
    if (Array.isArray(v)) return v.map(String).join(' ');
  }
  return clip(JSON.stringify(input), 300);
}

function argvText(c: unknown): string {
  return Array.isArray(c) ? c.map(String).join(' ') : String(c ?? '');
}

/**
 * A task's events as terminal lines: what the worker said, each tool call with its output, usage,
 * verification commands and state changes. Events the log has nothing to say about are left out.
 */
export function logLinesOf(events: EventRow[]): LogLine[] {
  const out: LogLine[] = [];
  const add = (e: EventRow, kind: LogLine['kind'], text: string) => out.push({ seq: e.seq, ts: e.ts, kind, text });
  for (const e of events) {
    const p = e.payload;
    switch (e.type) {
      case 'task.status':
        add(e, 'status', `── ${String(p.from)} → ${String(p.to)}${p.reason ? ` (${String(p.reason)})` : ''}`);
        break;
      case 'worker.started':
        add(e, 'status', `▶ worker started${p.model ? ` · model ${String(p.model)}` : ''}${p.sessionId ? ` · session ${String(p.sessionId)}` : ''}`);
        break;
      case 'worker.message':
        add(e, 'message', String(p.text ?? ''));
        break;
      case 'worker.tool': {
        const status = p.status && p.status !== 'completed' ? ` [${String(p.status)}]` : '';
        add(e, 'tool', `$ ${String(p.name ?? 'tool')} ${toolInput(p.input)}${status}`.trimEnd());
        if (typeof p.output === 'string' && p.output) add(e, 'output', clip(p.output));
        break;
      }
      case 'worker.usage':
        add(e, 'usage', `· ${Number(p.inputTokens ?? 0)} tokens in (${Number(p.cachedTokens ?? 0)} cached), ${Number(p.outputTokens ?? 0)} out${p.model ? ` · ${String(p.model)}` : ''}`);
        break;
      case 'worker.completed':
        add(e, 'done', `✓ worker finished${typeof p.text === 'string' && p.text ? `: ${clip(p.text, 600)}` : ''}`);
        break;
      case 'worker.failed':
        add(e, 'fail', `✗ worker failed: ${String(p.message ?? '')}`);
        break;
      case 'worker.output_truncated':
        // A flooding worker: the log says where its stored output stops and how much was left out.
        add(e, 'status', `… ${String(p.message ?? 'output truncated')}`);
        break;
      case 'verify.command':
        add(e, 'verify', `$ ${argvText(p.command)}  → ${p.timedOut ? 'timed out' : `exit ${String(p.exitCode)}`}`);
        if (typeof p.outputTail === 'string' && p.outputTail) add(e, 'output', clip(p.outputTail));
        break;
      case 'verify.completed':
        add(e, p.ok ? 'done' : 'fail', p.ok ? '✓ verification passed' : '✗ verification failed');
        break;
      default:
        break;
    }
  }
  return out;
}
