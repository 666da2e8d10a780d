import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a server (the test PostgreSQL), to take the network away from a
 * process under test: `cut()` drops every connection and refuses new ones, `blackhole()` keeps
 * connections open but forwards nothing (a server that stopped answering), `restore()` works again.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  blackhole(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let mode: 'open' | 'blackhole' = 'open';
  let server: Server;
  let port = 0;
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        track(client);
        if (mode === 'blackhole') return; // accepted, never answered
        const upstream = createConnection(target);
        track(upstream);
        const forward = (from: Socket, to: Socket) =>
          from.on('data', (chunk) => {
            if (mode === 'open') to.write(chunk);
          });
        forward(client, upstream);
        forward(upstream, client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  await listen();
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return {
    get port() {
      return port;
    },
    async cut() {
      await stop();
    },
    blackhole() {
      mode = 'blackhole';
    },
    async restore() {
      mode = 'open';
      if (!server.listening) await listen();
    },
    close: stop,
  };
}
