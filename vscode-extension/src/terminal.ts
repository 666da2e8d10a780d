import type { Pseudoterminal } from 'vscode';
import { createEmitter, type BridgeApi } from './api.js';
import type { TurnEvent } from './agent-turn.js';

const MAX_BUFFERED = 256 * 1024;

/** A short human line for one agent JSON line (assistant text, tool use, result), else the raw line. */
export function describeLine(line: string): string {
  try {
    const e = JSON.parse(line) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- agent JSON, read loosely for display only
    if (e.type === 'assistant') {
      return (e.message?.content ?? []).map((b: Record<string, any>) => (b.type === 'text' ? b.text : b.type === 'tool_use' ? `[tool] ${b.name}` : '')).filter(Boolean).join('\n'); // eslint-disable-line @typescript-eslint/no-explicit-any
    }
    if (e.type === 'result') return `[result] ${e.subtype ?? ''} ${typeof e.result === 'string' ? e.result.slice(0, 500) : ''}`;
    if (e.type === 'item.completed' && e.item?.type === 'agent_message') return String(e.item.text ?? '');
    if (e.type === 'item.started' && e.item?.type === 'command_execution') return `[shell] ${String(e.item.command ?? '')}`;
    if (e.type === 'system' && e.subtype === 'init') return `[session] ${String(e.session_id ?? '')}`;
    if (e.type === 'thread.started') return `[session] ${String(e.thread_id ?? '')}`;
    return '';
  } catch {
    return line;
  }
}

/**
 * The editor terminal that shows a delegated turn: a pseudoterminal fed from the captured process
 * output (so LightWorker gets the exact JSON stream while the user watches). Closing it, or Ctrl+C in
 * it, cancels the turn.
 */
export function openTurnTerminal(api: BridgeApi, title: string, onCancel: (reason: string) => void, reveal: boolean): { write(e: TurnEvent): void } {
  const writer = createEmitter<string>();
  const closer = createEmitter<number | void>();
  let opened = false;
  let pending = '';
  let ended = false;
  const out = (text: string) => {
    const t = text.replace(/\r?\n/g, '\r\n');
    if (opened) writer.fire(t);
    else if (pending.length < MAX_BUFFERED) pending += t;
  };
  const pty: Pseudoterminal = {
    onDidWrite: writer.event,
    onDidClose: closer.event,
    open: () => {
      opened = true;
      if (pending) writer.fire(pending);
      pending = '';
    },
    close: () => {
      if (!ended) onCancel('terminal closed');
    },
    handleInput: (data: string) => {
      if (data === '\x03' && !ended) onCancel('Ctrl+C in the terminal');
    },
  };
  const terminal = api.window.createTerminal({ name: title, pty });
  if (reveal) terminal.show(true);
  return {
    write(e: TurnEvent) {
      if (e.type === 'turn.started') out(`LightWorker turn ${e.turn_id} — ${e.agent} (${e.cli}), pid ${e.pid}\n`);
      else if (e.type === 'stdout') {
        const text = describeLine(e.line);
        if (text) out(text + '\n');
      } else if (e.type === 'stderr') out(e.text);
      else {
        ended = true;
        out(`\n[turn ended: ${e.cancelled ? `cancelled (${e.reason})` : e.reason ?? `exit ${e.code ?? e.signal}`}]\n`);
      }
    },
  };
}
