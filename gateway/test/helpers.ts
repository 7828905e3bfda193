import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeServices } from '@apollo/composition';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { createLogger, type Logger } from '@halo/kit/logging';
import { listen } from '@halo/kit/process';
import { testIdentityEnv } from '@halo/kit/testing';
import { parse } from 'graphql';
import { createGateway, type Gateway } from '../src/app';
import { loadGatewayConfig, type GatewayConfig } from '../src/config';
import { createSupergraphSource } from '../src/supergraph';
import { DEFAULT_ROUTES_PATH, parseRouteTable, type RouteTableFile } from '../src/rest/routes';

/** Composes a supergraph from subgraph SDLs, failing loudly when composition fails. */
export function composeSupergraph(subgraphs: { name: string; sdl: string; url: string }[]): string {
  const result = composeServices(subgraphs.map((s) => ({ name: s.name, typeDefs: parse(s.sdl), url: s.url })));
  if (result.errors) throw new Error(result.errors.map((e) => e.message).join('\n'));
  return result.supergraphSdl;
}

/** A temporary directory holding one supergraph file; `remove()` deletes it. */
/** What createGraphQL needs from src/supergraph: the committed files, the gateway's URL rules. */
export function fileSource(config: GatewayConfig, logger: Logger) {
  const source = createSupergraphSource({
    supergraphPath: config.SUPERGRAPH_PATH,
    routesPath: config.ROUTES_PATH,
    openapiPath: config.OPENAPI_PATH,
    serviceUrlOverrides: config.explicitServiceUrls,
    defaultServiceUrls: config.serviceUrls,
    logger,
  });
  return { supergraph: source.hook, subgraphUrl: source.subgraphUrl };
}

export function tempSupergraph(sdl: string) {
  const dir = mkdtempSync(join(tmpdir(), 'halo-gateway-'));
  const path = join(dir, 'supergraph.graphql');
  writeFileSync(path, sdl);
  return {
    path,
    write: (next: string) => writeFileSync(path, next),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The committed route table (gateway/routes.json), parsed; tests change copies of it. */
export function committedRouteTable(): RouteTableFile {
  return parseRouteTable(readFileSync(DEFAULT_ROUTES_PATH, 'utf8'));
}

/** A temporary route table file: the committed one, changed by `change`; `write` replaces it. */
export function tempRouteTable(change: (table: RouteTableFile) => void = () => undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'halo-routes-'));
  const path = join(dir, 'routes.json');
  const write = (next: (table: RouteTableFile) => void) => {
    const table = committedRouteTable();
    next(table);
    writeFileSync(path, `${JSON.stringify(table, null, 2)}\n`);
  };
  write(change);
  return { path, write, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A minimal subgraph, for tests that only need the gateway to start. */
export const MINIMAL_SUBGRAPH_SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { ping: String }
`;

export interface RunningGateway {
  gateway: Gateway;
  logger: Logger;
  url: string;
  port: number;
  /** Where its Prometheus metrics are served (`http://127.0.0.1:<METRICS_PORT>`), null when off. */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

/**
 * Starts the gateway in-process on a free port with the given environment (silent by default);
 * its metrics on another free port.
 */
export async function startGateway(env: Record<string, string>, logger?: Logger): Promise<RunningGateway> {
  const config = loadGatewayConfig({
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'silent',
    // Test files send hundreds of requests from one address; the rate-limit tests set their own.
    RATE_LIMIT_ANONYMOUS: '1000000',
    RATE_LIMIT_AUTHENTICATED: '1000000',
    RATE_LIMIT_GRAPHQL_COST: '1000000000',
    ...testIdentityEnv('gateway'),
    ...env,
  });
  logger ??= createLogger('gateway', config.LOG_LEVEL);
  const gateway = createGateway(config, logger);
  const { port, metricsPort } = await gateway.start();
  return {
    gateway,
    logger,
    port,
    url: `http://127.0.0.1:${port}`,
    metricsUrl: metricsPort === null ? null : `http://127.0.0.1:${metricsPort}`,
    stop: () => gateway.stop(),
  };
}

/** What the echo upstream saw. */
export interface Echoed {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The body bytes, base64, so binary bodies compare exactly. */
  body: string;
  bodyLength: number;
}

/**
 * A plain node:http upstream that answers every request with what it received. Request headers
 * steer it: `x-echo-status` sets the status, `x-echo-cache-control` its Cache-Control,
 * `x-echo-delay` (ms) delays the answer, and
 * `holdUntil(n)` parks requests until n are parked at once (then releases them all).
 */
export async function startEcho() {
  let holdTarget = 0;
  let held: (() => void)[] = [];
  let received = 0;
  const server = createServer((req, res) => {
    received++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const answer = () => {
        const echoed: Echoed = {
          method: req.method!,
          url: req.url!,
          headers: req.headers,
          body: body.toString('base64'),
          bodyLength: body.length,
        };
        const payload = JSON.stringify(echoed);
        res.writeHead(Number(req.headers['x-echo-status'] ?? 200), {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          'x-echo': 'yes',
          ...(typeof req.headers['x-echo-cache-control'] === 'string' ? { 'cache-control': req.headers['x-echo-cache-control'] } : {}),
        });
        res.end(payload);
      };
      const delay = Number(req.headers['x-echo-delay'] ?? 0);
      if (delay > 0) {
        const timer = setTimeout(answer, delay);
        res.on('close', () => clearTimeout(timer));
      } else if (holdTarget > 0) {
        held.push(answer);
        if (held.length >= holdTarget) {
          holdTarget = 0;
          const release = held;
          held = [];
          for (const go of release) go();
        }
      } else {
        answer();
      }
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    /** How many requests reached the upstream so far. */
    count: () => received,
    /** Park requests until `n` are parked at the same time. */
    holdUntil(n: number) {
      holdTarget = n;
    },
    /** Releases whatever is parked (a safety valve for a failing test). */
    releaseAll() {
      holdTarget = 0;
      for (const go of held.splice(0)) go();
    },
    close: () => closeServer(server),
  };
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** A port that refuses connections, and stays so while parallel tests bind theirs (the kit's). */
export { closedPort } from '@halo/kit/testing';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A request through node:http, for what fetch cannot express: a declared Content-Length that is
 * never sent (`declaredLength`), or a body sent chunk by chunk with Transfer-Encoding: chunked.
 * Resolves with the response; errors after it (the gateway closing the socket) are ignored.
 */
export function rawRequest(
  port: number,
  opts: { method: string; path: string; headers?: Record<string, string>; chunks?: Buffer[]; declaredLength?: number },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.declaredLength !== undefined) headers['content-length'] = String(opts.declaredLength);
    const req = request({ host: '127.0.0.1', port, method: opts.method, path: opts.path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        answered = true;
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        req.destroy();
      });
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (opts.declaredLength !== undefined) {
      req.flushHeaders();
      return;
    }
    for (const chunk of opts.chunks ?? []) req.write(chunk);
    req.end();
  });
}

/** Polls `check` until it returns something truthy, for at most ~10 s. */
export async function until<T>(check: () => T | Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met within the time limit');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface TestSubgraph {
  url: string;
  /** Operations it received so far (the gateway's fetches, entity fetches included). */
  calls(): number;
  stop(): Promise<void>;
}

/**
 * A real federation subgraph (@apollo/server over node:http on a free port) from SDL and
 * resolvers, counting the operations it receives, so a test can tell "never reached a subgraph".
 * Resolvers see `{ headers }` as context.
 */
export async function startSubgraph(sdl: string, resolvers: Record<string, Record<string, unknown>>): Promise<TestSubgraph> {
  let calls = 0;
  const server = new ApolloServer<{ headers: IncomingHttpHeaders }>({
    plugins: [
      ApolloServerPluginInlineTraceDisabled(),
      {
        async requestDidStart() {
          calls++;
        },
      },
    ],
    schema: buildSubgraphSchema({ typeDefs: parse(sdl), resolvers: resolvers as never }),
  });
  const { url } = await startStandaloneServer(server, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({ headers: req.headers }),
  });
  return { url: url.replace(/\/$/, ''), calls: () => calls, stop: () => server.stop() };
}
