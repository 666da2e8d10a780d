/**
 * Split a byte stream into lines with bounded memory: a line longer than `maxLine` is cut (the rest
 * of it dropped up to the next newline), so a runaway worker cannot grow the buffer without bound.
 */
export class LineSplitter {
  private buf = '';
  private dropping = false;
  constructor(
    private readonly onLine: (line: string, truncated: boolean) => void,
    private readonly maxLine = 1024 * 1024,
  ) {}

  push(chunk: string): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf('\n', start);
      if (nl === -1) break;
      const piece = chunk.slice(start, nl);
      start = nl + 1;
      if (this.dropping) {
        this.dropping = false;
        this.buf = '';
        continue;
      }
      const line = this.buf + piece;
      this.buf = '';
      if (line.length > this.maxLine) this.onLine(line.slice(0, this.maxLine), true);
      else this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line, false);
    }
    if (this.dropping) return;
    this.buf += chunk.slice(start);
    if (this.buf.length > this.maxLine) {
      this.onLine(this.buf.slice(0, this.maxLine), true);
      this.buf = '';
      this.dropping = true;
    }
  }

  end(): void {
    if (this.buf && !this.dropping) this.onLine(this.buf, false);
    this.buf = '';
  }
}

/** Keeps the last `max` characters written to it. */
export class TailBuffer {
  private parts: string[] = [];
  private size = 0;
  constructor(private readonly max = 16 * 1024) {}
  push(s: string): void {
    this.parts.push(s);
    this.size += s.length;
    while (this.size > this.max * 2 && this.parts.length > 1) this.size -= this.parts.shift()!.length;
  }
  toString(): string {
    const all = this.parts.join('');
    return all.length > this.max ? all.slice(all.length - this.max) : all;
  }
}
