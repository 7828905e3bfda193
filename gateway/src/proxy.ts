import { Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { sendJson, type Logger, type ServiceName } from '@halo/kit';
import {
  createProxyMiddleware,
  debugProxyErrorsPlugin,
  proxyEventsPlugin,
  type Plugin,
  type RequestHandler,
} from 'http-proxy-middleware';

/**
 * The REST proxy: one http-proxy-middleware instance per service, created once, each with its own
 * keep-alive pool. It is called straight from the node:http handler (no express on this path).
 */

/**
 * Bodies the gateway has already read, by request. http-proxy sends `options.buffer` instead of
 * piping the (already consumed) request stream; see `bufferedBodyPlugin`.
 */
const bodies = new WeakMap<IncomingMessage, Buffer>();
/** Connection errors that mean "the service is not there" rather than "it answered badly". */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Requests whose upstream went idle past the timeout: their error is a 504, not a 502. */
const timedOut = new WeakSet<IncomingMessage>();

type Pass = (req: IncomingMessage, res: ServerResponse, options: { buffer?: NodeJS.ReadableStream }) => void;
/** `ProxyServer#before` is public in http-proxy 1.x but missing from @types/http-proxy. */
interface WithPasses {
  before(type: 'web', passName: string, pass: Pass): void;
}

/**
 * Gives each request with an already-read body its own `buffer` option (http-proxy's documented
 * way to resend a consumed body). It runs as a pass before `stream`, on the per-request copy of
 * the options. Writing the bytes in `proxyReq` instead is not safe: that event waits for a
 * socket, and when the pool is saturated http-proxy has already ended the outgoing request by
 * then (piping the ended request stream), so the body would be lost and the upstream would hang.
 */
const bufferedBodyPlugin: Plugin = (proxyServer) => {
  (proxyServer as unknown as WithPasses).before('web', 'stream', (req, _res, options) => {
    const body = bodies.get(req);
    if (body !== undefined) options.buffer = Readable.from([body]);
  });
};

export interface ProxyOptions {
  targets: Record<ServiceName, string>;
  timeoutMs: number;
  logger: Logger;
}

export function createServiceProxies({ targets, timeoutMs, logger }: ProxyOptions) {
  const agents: Agent[] = [];
  const proxies = new Map<ServiceName, RequestHandler>();

  for (const [service, target] of Object.entries(targets) as [ServiceName, string][]) {
    const agent = new Agent({ keepAlive: true, maxSockets: 256 });
    agents.push(agent);
    proxies.set(
      service,
      createProxyMiddleware<IncomingMessage, ServerResponse>({
        target,
        agent,
        xfwd: true,
        changeOrigin: false,
        proxyTimeout: timeoutMs,
        // The default logger plugin builds URLs for every response even when it logs nothing;
        // keep only the socket-error guards and the `on` events.
        ejectPlugins: true,
        plugins: [debugProxyErrorsPlugin, proxyEventsPlugin, bufferedBodyPlugin],
        on: {
          proxyReq: (proxyReq, req) => {
            // Runs after http-proxy's own timeout callback, which aborts the request.
            proxyReq.once('timeout', () => timedOut.add(req));
          },
          proxyRes: (proxyRes, req) => {
            // Before http-proxy copies the headers. A service's Cache-Control stands for its public
            // answers; an error, or an answer to a caller with credentials, is never stored
            // (docs/api/conventions.md). Without one, the gateway's default no-store stays.
            if ((proxyRes.statusCode ?? 500) >= 400 || req.headers.authorization !== undefined || req.headers['x-api-key'] !== undefined) {
              proxyRes.headers['cache-control'] = 'no-store';
            }
          },
          error: (err, req, res) => {
            const code = (err as NodeJS.ErrnoException).code;
            const isTimeout = timedOut.has(req);
            logger.error(
              { requestId: req.headers['x-request-id'], service, code, message: err.message },
              isTimeout ? 'upstream timed out' : 'upstream request failed',
            );
            if (!('writeHead' in res)) return void res.destroy();
            if (res.headersSent) return void res.destroy();
            if (isTimeout) sendJson(res, 504, { error: 'Gateway timeout' });
            // Nobody listening (a service down or restarting): say so, and fast (docs/api/conventions.md).
            else if (UNREACHABLE.has(code ?? '')) sendJson(res, 503, { error: 'Service unavailable' });
            else sendJson(res, 502, { error: 'Bad gateway' });
          },
        },
      }),
    );
  }

  return {
    /**
     * Forwards the request to the service. With `body`, those bytes are sent (with a matching
     * Content-Length) in place of the request stream, which the caller has already read.
     */
    forward(service: ServiceName, req: IncomingMessage, res: ServerResponse, body?: Buffer): void {
      const proxy = proxies.get(service);
      if (!proxy) {
        sendJson(res, 502, { error: 'Bad gateway' });
        return;
      }
      if (body !== undefined) {
        bodies.set(req, body);
        req.headers['content-length'] = String(body.length);
        delete req.headers['transfer-encoding'];
        // The gateway already answered `100 Continue` and holds the body: nothing to wait for.
        delete req.headers.expect;
      }
      void proxy(req, res, (err?: unknown) => {
        logger.error({ err, requestId: req.headers['x-request-id'], service }, 'proxy failed');
        if (!res.headersSent) sendJson(res, 502, { error: 'Bad gateway' });
      });
    },
    /** Drops the pooled upstream connections (after the server has drained). */
    close(): void {
      for (const agent of agents) agent.destroy();
    },
  };
}

export type ServiceProxies = ReturnType<typeof createServiceProxies>;
