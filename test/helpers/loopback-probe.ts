import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { WorkerAdapter } from '../../main/workers/adapter.js';

/**
 * Proof that a worker talks to nothing but loopback: its whole process tree runs under
 * `strace -f -e trace=connect,sendto,sendmsg`, which logs the address of every socket connect and
 * every addressed datagram (DNS included) — whether or not the network would have answered. Any
 * AF_INET/AF_INET6 address outside 127.0.0.0/8 and ::1 is an escape. A positive control in
 * workers.loopback-probe.test.ts shows a real outbound attempt is caught.
 */

export function straceAvailable(): string | null {
  try {
    execFileSync('strace', ['-V'], { stdio: 'pipe' });
  } catch {
    return 'strace is not installed (apt-get install strace)';
  }
  try {
    execFileSync('strace', ['-f', '-qq', '-e', 'trace=connect', '-o', '/dev/null', '--', 'true'], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return `strace cannot trace here (ptrace not permitted?): ${(err as Error).message.split('\n')[0]}`;
  }
}

/** Wrap an adapter so its process tree runs under strace, writing the syscall log to `logFile`. */
export function traced(adapter: WorkerAdapter, logFile: string): WorkerAdapter {
  return {
    ...adapter,
    async buildSpawn(turn) {
      const spec = await adapter.buildSpawn(turn);
      return {
        ...spec,
        command: 'strace',
        args: ['-f', '-qq', '-s', '0', '-e', 'trace=connect,sendto,sendmsg', '-e', 'signal=none', '-o', logFile, '--', spec.command, ...spec.args],
      };
    },
  };
}

export interface NetworkUse {
  /** Distinct remote addresses contacted ("ip:port"), loopback included. */
  addresses: string[];
  /** Those outside loopback. */
  escapes: string[];
}

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1' || ip.startsWith('::ffff:127.');
}

/** Parse a strace log written by `traced`. */
export function networkUse(logFile: string): NetworkUse {
  const text = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
  const found = new Set<string>();
  const re = /sa_family=AF_INET6?, (?:sin6?_port=htons\((\d+)\))[^}]*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")/g;
  for (const m of text.matchAll(re)) found.add(`${m[2] ?? m[3]}:${m[1]}`);
  const addresses = [...found].sort();
  return { addresses, escapes: addresses.filter((a) => !isLoopback(a.slice(0, a.lastIndexOf(':')))) };
}
