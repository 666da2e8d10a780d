import { closeSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { mkdirPrivate } from '../core/private-home.js';

/** Tail text is held in pieces of about this many characters (few strings, whatever the line length). */
const PIECE_CHARS = 64 * 1024;

/**
 * A turn's redacted raw stdout (`stdout.jsonl`), capped at `max` characters: the first half is written as
 * it comes, the last half is held in memory and written when the turn ends, with one line between them
 * saying how much was left out — how a flood began and how it ended both survive. Appended with plain
 * system calls once per event-loop turn that brought lines: a WriteStream's asynchronous open, writes and
 * close cost a leader ~0.4 ms of CPU per task. The file is created with the first line. A log that cannot
 * be written is given up on quietly: it is a diagnostic copy, the events hold what the turn did.
 */
export class RawLog {
  private fd: number | null = null;
  private head: string[] = [];
  private headChars = 0;
  private failed = false;
  /** The tail: whole pieces, then the piece being filled. */
  private pieces: string[] = [];
  private piecesChars = 0;
  private filling: string[] = [];
  private fillingChars = 0;
  /** Characters (and lines) that fell out between the head and the tail. */
  droppedChars = 0;
  droppedLines = 0;
  private tailLines: number[] = [];
  private fillingLines = 0;

  constructor(
    private readonly path: string,
    private readonly max: number,
  ) {}

  /** Lines are kept as they come and joined per piece: no string per line (`line + '\n'`) in a flood of them. */
  add(line: string): void {
    if (this.headChars < this.max / 2) {
      this.headChars += line.length + 1;
      this.head.push(line);
      return;
    }
    this.filling.push(line);
    this.fillingChars += line.length + 1;
    this.fillingLines++;
    if (this.fillingChars >= PIECE_CHARS) this.sealPiece();
  }

  /** Write what the head gathered since the last flush. */
  flush(): void {
    if (!this.head.length) return;
    const text = this.head.join('\n') + '\n';
    this.head = [];
    this.write(text);
  }

  /** Write the head, the note of what was left out, and the tail; close the file. */
  close(): void {
    this.flush();
    this.sealPiece();
    if (this.pieces.length) {
      // The oldest piece may reach past the tail's share: cut it to size at a line start.
      let tail = this.pieces.join('');
      const over = tail.length - this.max / 2;
      if (over > 0) {
        const cut = tail.indexOf('\n', over - 1) + 1 || tail.length;
        this.droppedChars += cut;
        this.droppedLines += countLines(tail, cut);
        tail = tail.slice(cut);
      }
      if (this.droppedChars > 0) this.write(`[lightworker: ${this.droppedChars} characters (${this.droppedLines} lines) of output left out here; this log keeps the first and last ${Math.floor(this.max / 2)}]\n`);
      this.write(tail);
      this.pieces = [];
    }
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private sealPiece(): void {
    if (!this.filling.length) return;
    this.pieces.push(this.filling.join('\n') + '\n');
    this.tailLines.push(this.fillingLines);
    this.piecesChars += this.fillingChars;
    this.filling = [];
    this.fillingChars = 0;
    this.fillingLines = 0;
    // Keep whole pieces while the rest still covers the tail's share.
    while (this.pieces.length > 1 && this.piecesChars - this.pieces[0].length >= this.max / 2) {
      const gone = this.pieces.shift()!;
      this.piecesChars -= gone.length;
      this.droppedChars += gone.length;
      this.droppedLines += this.tailLines.shift()!;
    }
  }

  private write(text: string): void {
    if (this.failed) return;
    try {
      if (this.fd === null) {
        mkdirPrivate(dirname(this.path));
        this.fd = openSync(this.path, 'a', 0o600);
      }
      writeSync(this.fd, text);
    } catch {
      this.failed = true;
    }
  }
}

function countLines(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
