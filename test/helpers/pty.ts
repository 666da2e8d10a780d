import { execFile } from 'node:child_process';
import { BIN } from './cli.js';

/** Runs argv with stdin and stderr on a fresh pseudo-terminal (stdout stays a pipe); prints what the terminal showed to stderr. */
const PTY_RUNNER = `
import os, pty, sys, subprocess, fcntl, termios, struct, select
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 24, int(os.environ.get('PTY_COLUMNS', '100')), 0, 0))
p = subprocess.Popen(sys.argv[1:], stdin=slave, stderr=slave, stdout=sys.stdout)
os.close(slave)
seen = b''
while True:
    r, _, _ = select.select([master], [], [], 0.1)
    if r:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            chunk = b''
        if not chunk and p.poll() is not None:
            break
        seen += chunk
    elif p.poll() is not None:
        break
sys.stderr.buffer.write(seen)
sys.exit(p.wait())
`;

export interface PtyResult {
  code: number;
  stdout: string;
  /** Everything the command wrote to the terminal (its stderr), escape codes included. */
  terminal: string;
}

/** Run the real `lightworker` with its stderr on a pseudo-terminal (python3's pty module). */
export function runCliOnTty(args: string[], opts: { home: string; columns?: number; env?: Record<string, string>; timeoutMs?: number }): Promise<PtyResult> {
  return new Promise((resolve) => {
    execFile(
      'python3',
      ['-c', PTY_RUNNER, process.execPath, BIN, ...args],
      { env: { ...process.env, LIGHTWORKER_HOME: opts.home, TERM: 'xterm', PTY_COLUMNS: String(opts.columns ?? 100), ...opts.env }, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, terminal: stderr });
      },
    );
  });
}
