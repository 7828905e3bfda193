import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from '../logging/logger';

type Closer = () => Promise<void> | void;

/** How long a service started by the launcher drains once the launcher is gone. */
export const LAUNCHER_GONE_DRAIN_MS = 3_000;

/**
 * Resources registered as they are opened and released in reverse order on shutdown, each with
 * a share of one overall grace period. After shutdown the event loop empties and the process
 * exits by itself; `process.exit` is only a last resort when something refuses to close.
 */
export class Lifecycle {
  private readonly stack: { name: string; close: Closer }[] = [];
  private stopping: Promise<void> | null = null;
  /** False from the moment shutdown begins, so readiness fails while we drain. */
  accepting = true;

  constructor(private readonly logger: Logger) {}

  register(name: string, close: Closer): void {
    this.stack.push({ name, close });
  }

  shutdown(timeoutMs: number): Promise<void> {
    this.stopping ??= this.run(timeoutMs);
    return this.stopping;
  }

  private async run(timeoutMs: number): Promise<void> {
    this.accepting = false;
    const deadline = Date.now() + timeoutMs;
    for (const { name, close } of this.stack.reverse()) {
      const left = Math.max(deadline - Date.now(), 100);
      try {
        await withTimeout(Promise.resolve().then(close), left, name);
      } catch (err) {
        this.logger.warn({ err, resource: name }, 'resource did not close cleanly');
      }
    }
    this.logger.info('shutdown complete');
  }

  /**
   * SIGTERM/SIGINT start a graceful shutdown; another signal a second or more later exits at once.
   * (Ctrl+C under `npm start` reaches a service twice at the same moment — from the terminal's
   * process group and from the launcher — and that must not cut the drain short.)
   */
  installSignalHandlers(timeoutMs: number): void {
    let firstAt = 0;
    const onSignal = (signal: NodeJS.Signals | 'disconnect', graceMs = timeoutMs) => {
      if (firstAt) {
        if (Date.now() - firstAt >= 1_000) process.exit(1);
        return;
      }
      firstAt = Date.now();
      this.logger.info({ signal }, 'shutting down');
      const hardStop = setTimeout(() => process.exit(1), graceMs + 2_000);
      hardStop.unref();
      void this.shutdown(graceMs).then(() => {
        process.exitCode ??= 0;
      });
    };
    // Not `process.on('SIGTERM', onSignal)`: Node passes the signal's number (15) as a second
    // argument, which would become a 15 ms grace period.
    process.on('SIGTERM', (signal) => onSignal(signal));
    process.on('SIGINT', (signal) => onSignal(signal));
    // Started by the embedded launcher (an IPC channel): when the launcher dies, even by SIGKILL,
    // the channel closes and the service drains (at most LAUNCHER_GONE_DRAIN_MS: nobody waits for
    // it) and exits instead of holding its ports. The channel is unref'd so it never keeps a
    // finished process alive.
    const launcherGone = () => {
      onSignal('disconnect', Math.min(timeoutMs, LAUNCHER_GONE_DRAIN_MS));
      // Out at LAUNCHER_GONE_DRAIN_MS whatever the drain still waits for.
      setTimeout(() => process.exit(1), LAUNCHER_GONE_DRAIN_MS).unref();
    };
    if (process.channel) {
      process.channel.unref();
      process.once('disconnect', launcherGone);
    } else if (process.send && !process.connected) {
      // The launcher died while this service was still starting.
      launcherGone();
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, name: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${name} did not close within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : port);
    });
  });
}

/**
 * Stops accepting connections, lets in-flight requests finish, closes idle keep-alive sockets at
 * once and, when the grace period runs out, the rest. (Node ≥ 18.2 has these primitives, which is
 * why there is no http-terminator dependency.)
 */
export function closeHttpServer(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    // Node leaves a keep-alive connection open when its in-flight request ends after close(): sweep
    // idle ones until closed, and tell clients still sending on open connections to go away
    // (prepended, so it runs before an app that answers synchronously).
    const goAway = (_req: IncomingMessage, res: ServerResponse) => {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    };
    server.prependListener('request', goAway);
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    sweep.unref();
    const force = setTimeout(() => server.closeAllConnections(), timeoutMs);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      clearInterval(sweep);
      server.off('request', goAway);
      resolve();
    });
    server.closeIdleConnections();
  });
}
