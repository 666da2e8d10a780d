import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Largest accepted line (one JSON-RPC message). A 100-task batch of 64 KiB objectives fits. */
export const MAX_LINE_BYTES = 8 * 1024 * 1024;

type Id = string | number | null;

/**
 * Newline-delimited JSON-RPC over stdio, hardened: the SDK's own stdio transport drops malformed lines
 * without an answer and closes itself on an oversize buffer. Here every bad line gets a JSON-RPC error
 * (parse error, invalid request, too large, batch arrays) and the server keeps serving.
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Inside an oversize line: drop bytes until its newline. */
  private skipping = false;
  private closed = false;
  private readonly maxLine: number;

  constructor(
    private readonly input: Readable = process.stdin,
    private readonly output: Writable = process.stdout,
    opts: { maxLineBytes?: number } = {},
  ) {
    this.maxLine = opts.maxLineBytes ?? MAX_LINE_BYTES;
  }

  private readonly onData = (chunk: Buffer | string) => {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (;;) {
      const nl = buf.indexOf(0x0a);
      if (nl === -1) {
        if (this.skipping) return;
        this.chunks.push(buf);
        this.buffered += buf.length;
        if (this.buffered > this.maxLine) this.startSkipping();
        return;
      }
      const head = buf.subarray(0, nl);
      buf = buf.subarray(nl + 1);
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      if (this.buffered + head.length > this.maxLine) {
        this.reject(null, -32600, `message larger than ${this.maxLine} bytes`);
      } else {
        this.chunks.push(head);
        const line = Buffer.concat(this.chunks).toString('utf8');
        this.chunks = [];
        this.buffered = 0;
        this.handleLine(line);
      }
      this.chunks = [];
      this.buffered = 0;
    }
  };

  private readonly onEnd = () => void this.close();
  private readonly onStreamError = (e: Error) => this.onerror?.(e);

  private startSkipping(): void {
    this.chunks = [];
    this.buffered = 0;
    this.skipping = true;
    this.reject(null, -32600, `message larger than ${this.maxLine} bytes`);
  }

  private handleLine(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return this.reject(null, -32700, 'Parse error: not valid JSON');
    }
    if (Array.isArray(value)) return this.reject(null, -32600, 'Invalid Request: JSON-RPC batch arrays are not supported');
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      // A broken notification or response gets no answer (nobody waits for one); anything else does.
      if (isNotificationOrResponse(value)) return;
      return this.reject(idOf(value) ?? null, -32600, 'Invalid Request: not a JSON-RPC 2.0 message');
    }
    try {
      this.onmessage?.(parsed.data);
    } catch (e) {
      this.onerror?.(e as Error);
    }
  }

  private reject(id: Id, code: number, message: string): void {
    void this.send({ jsonrpc: '2.0', id, error: { code, message } } as unknown as JSONRPCMessage);
  }

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('end', this.onEnd);
    this.input.on('error', this.onStreamError);
    // A client that closes our stdout (EPIPE) must not crash the process.
    this.output.on('error', this.onStreamError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const ok = this.output.write(JSON.stringify(message) + '\n', (err) => {
        if (err) this.onerror?.(err);
      });
      if (ok) resolve();
      else this.output.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.off('error', this.onStreamError);
    this.input.pause();
    this.chunks = [];
    this.onclose?.();
  }
}

function idOf(v: unknown): Id | undefined {
  if (!v || typeof v !== 'object') return undefined;
  const id = (v as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

function isNotificationOrResponse(v: unknown): boolean {
  if (!v || typeof v !== 'object') return false;
  return ('method' in v && !('id' in v)) || (!('method' in v) && ('result' in v || 'error' in v));
}
