import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { pipeline } from 'node:stream';

/**
 * A port that is taken now and served later: the launcher listens on it itself, and the first
 * connection starts the server behind it (`start`, which resolves to the loopback port that server
 * listens on). Every connection, the first included, is then relayed byte for byte to that port,
 * so clients see one address whether or not the server has started. For the dev OpenID provider:
 * few use it, and until someone does it costs no process (and no memory) of its own.
 */
export interface LazyPort {
  /** Where it listens (the OS's choice when asked for port 0). */
  readonly port: number;
  /** Whether a connection has come and `start` was called. */
  readonly started: boolean;
  /** Stops listening and cuts every relayed connection (the server behind is the caller's to stop). */
  close(): Promise<void>;
}

export function listenLazily(
  host: string,
  port: number,
  start: () => Promise<number>,
  /** Called when `start` failed (each waiting connection is closed; the next one tries again). */
  onError: (err: unknown) => void = () => undefined,
): Promise<LazyPort> {
  let upstream: Promise<number> | undefined;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    // Until the upstream is known the client's bytes wait in its (paused) stream.
    client.on('error', () => client.destroy());
    if (!upstream) {
      upstream = start();
      upstream.catch((err: unknown) => {
        upstream = undefined;
        onError(err);
      });
    }
    upstream.then(
      (to) => {
        if (client.destroyed) return;
        const target = connect(to, '127.0.0.1');
        track(target);
        // Either side closing or failing closes the other.
        pipeline(client, target, client, () => undefined);
      },
      () => client.destroy(),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        get started() {
          return upstream !== undefined;
        },
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
