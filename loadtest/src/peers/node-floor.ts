import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Pool, type Dispatcher } from 'undici';

/**
 * The floor under any REST proxy written on Node's HTTP server and undici (S2, `npm run bench`):
 * what Halo's gateway is built on, with nothing of the gateway's own. Per request: the client's
 * headers copied minus hop-by-hop, one dispatch on a keep-alive pool, the answer's head copied and
 * its body streamed. No request id, access log, metrics, rate limits, CORS, routes or error
 * handling beyond a 502. The gateway's CPU per request over this one's is what Halo's edge rules
 * cost; this one's over nginx's is what the platform costs before the gateway does anything.
 *
 * Environment: PORT, UPSTREAM (the service's origin).
 */
const port = Number(process.env.PORT);
const pool = new Pool(process.env.UPSTREAM!, { connections: 256, pipelining: 1 });
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'transfer-encoding', 'upgrade', 'trailer', 'expect']);

createServer((req, res) => {
  const headers: IncomingHttpHeaders = {};
  for (const name in req.headers) if (!HOP.has(name)) headers[name] = req.headers[name];
  const handler: Dispatcher.DispatchHandler = {
    // Present, so that undici takes this for its current handler shape (as the gateway's is).
    onRequestStart() {},
    onResponseStart(_c, status, head) {
      for (const name in head) if (!HOP.has(name)) res.setHeader(name, head[name]!);
      res.statusCode = status;
    },
    onResponseData(c, chunk) {
      if (!res.write(chunk)) {
        c.pause();
        res.once('drain', () => c.resume());
      }
    },
    onResponseEnd() {
      res.end();
    },
    onResponseError() {
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
    },
  };
  pool.dispatch({ method: req.method as Dispatcher.HttpMethod, path: req.url!, headers: headers as Record<string, string> }, handler);
}).listen(port, '127.0.0.1');
