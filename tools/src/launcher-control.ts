import { chmodSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';

/**
 * The running launcher's control socket (docs/local-development.md, "Restarting one service"): a
 * Unix socket beside the launcher's record file, readable by its user only, through which
 * `npm run restart -- <service>` asks it to replace a service's processes. A Unix socket, not a
 * port: nothing else on the machine (or in a browser) can reach it.
 */
/** `key`: the launcher's port offset (HALO_PORT_OFFSET), or the name of a system on the OS's ports. */
export const controlSocketPath = (stateDir: string, key: number | string) => join(stateDir, `launcher-${key}.sock`);

/** What a restart answers: each instance replaced, and how long until it was ready again. */
export interface RestartAnswer {
  service: string;
  instances: { instance: number; readyMs: number; pid: number | undefined }[];
}

export interface ControlHandlers {
  /** Replaces every process of `service`, one after another; rejects with a message a person can act on. */
  restart(service: string): Promise<RestartAnswer>;
}

/** Listens on the socket (a stale one from a dead launcher is removed first). */
export async function listenControl(path: string, handlers: ControlHandlers): Promise<{ close(): Promise<void> }> {
  rmSync(path, { force: true });
  const server: Server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const match = /^\/restart\/([a-z]+)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !match) return answer(404, { error: 'Not found' });
    handlers.restart(match[1]!).then(
      (done) => answer(200, done),
      (err: unknown) => answer(409, { error: (err as Error).message }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        rmSync(path, { force: true });
      }),
  };
}

/** Asks the launcher listening on `path` to restart `service`; rejects when nobody listens. */
export function requestRestart(path: string, service: string): Promise<{ status: number; body: RestartAnswer & { error?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: path, method: 'POST', path: `/restart/${service}` }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as RestartAnswer & { error?: string } });
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('error', reject);
    req.end();
  });
}
