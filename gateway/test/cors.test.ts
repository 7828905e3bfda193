import WebSocket from 'ws';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../src/http';
import {
  closedPort,
  composeSupergraph,
  MINIMAL_SUBGRAPH_SDL,
  startEcho,
  startGateway,
  tempSupergraph,
  type RunningGateway,
} from './helpers';

/**
 * CORS and the WebSocket Origin check at the gateway, against a real gateway on a real port with
 * an echo upstream standing in for every service: what a browser on a listed origin, an unlisted
 * one and no browser at all (no Origin) each get.
 */

const APP = 'https://app.halo.example';
const DEV = 'http://localhost:5173';
const EVIL = 'https://evil.example';

let echo: Awaited<ReturnType<typeof startEcho>>;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;
let prod: RunningGateway;

const gatewayWith = async (env: Record<string, string>) =>
  startGateway({
    CONTENT_URL: echo.url,
    AUTH_URL: echo.url,
    CATALOG_URL: echo.url,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
    AUTH_GRPC_ADDR: `127.0.0.1:${await closedPort()}`,
    GRPC_DEADLINE_MS: '300',
    ...env,
  });

beforeAll(async () => {
  echo = await startEcho();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await gatewayWith({ HALO_ENV: 'production', CORS_ORIGINS: `${APP}, http://localhost:*` });
  prod = await gatewayWith({ HALO_ENV: 'production' });
});

afterAll(async () => {
  await gw?.stop();
  await prod?.stop();
  await echo?.close();
  supergraph?.remove();
});

const preflight = (g: RunningGateway, path: string, origin: string, headers: Record<string, string> = {}) =>
  fetch(g.url + path, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
      ...headers,
    },
  });

const corsHeaders = (res: Response) =>
  Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('access-control-')).sort(([a], [b]) => a.localeCompare(b)));

describe('preflight', () => {
  it.each([
    ['/graphql', APP],
    ['/products', APP],
    ['/posts/1', DEV],
    ['/docs', 'http://localhost:3000'],
  ])('%s from the listed %s → 204 with methods, headers, max-age and credentials', async (path, origin) => {
    const res = await preflight(gw, path, origin);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-credentials': 'true',
      'access-control-allow-headers': CORS_ALLOWED_HEADERS,
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
      'access-control-allow-origin': origin,
      'access-control-max-age': '600',
    });
    expect(res.headers.get('vary')).toBe('Origin');
  });

  it('allows every header the SDK and GraphQL clients send', () => {
    for (const h of [
      'Authorization',
      'Content-Type',
      'X-API-Key',
      'Idempotency-Key',
      'apollo-require-preflight',
      'graphql-client-name',
      'apollographql-client-name',
      'apollographql-client-version',
      'x-client-name',
      'x-client-version',
    ]) {
      expect(CORS_ALLOWED_HEADERS.split(', ')).toContain(h);
    }
  });

  it.each(['/graphql', '/graphql/stream'])(
    '%s: the SDK’s preflight (its client name and version headers) is allowed, each header it asks for listed',
    async (path) => {
      // What a browser asks before the SDK's GraphQL POST or SSE stream: lower-cased, sorted, comma-separated.
      const asked = ['apollographql-client-name', 'apollographql-client-version', 'authorization', 'content-type'];
      const res = await preflight(gw, path, APP, { 'access-control-request-headers': asked.join(',') });
      expect(res.status).toBe(204);
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
      expect(asked.filter((h) => !allowed.includes(h))).toEqual([]);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    },
  );

  it.each([
    ['an unlisted origin', () => gw, EVIL],
    ['a look-alike of a listed pattern', () => gw, 'http://localhost.evil.example:5173'],
    ['http instead of https', () => gw, 'http://app.halo.example'],
    ['Origin: null', () => gw, 'null'],
    ['any origin, when no list is configured (production default)', () => prod, APP],
  ])('%s → 403 in the contract shape, no CORS header', async (_, g, origin) => {
    const before = echo.count();
    const rest = await preflight(g(), '/products', origin);
    expect([rest.status, await rest.json()]).toEqual([403, { error: 'Origin not allowed' }]);
    expect(corsHeaders(rest)).toEqual({});
    const graphql = await preflight(g(), '/graphql', origin);
    expect([graphql.status, await graphql.json()]).toEqual([
      403,
      { errors: [{ message: 'Origin not allowed', extensions: { code: 'FORBIDDEN' } }] },
    ]);
    expect(corsHeaders(graphql)).toEqual({});
    expect(echo.count()).toBe(before);
  });
});

describe('answers', () => {
  it('a listed origin gets its origin, credentials and the exposed headers on a proxied answer (Vary merged)', async () => {
    const res = await fetch(`${gw.url}/products`, { headers: { origin: APP } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-echo')).toBe('yes');
    expect(corsHeaders(res)).toEqual({
      'access-control-allow-credentials': 'true',
      'access-control-allow-origin': APP,
      'access-control-expose-headers': CORS_EXPOSED_HEADERS,
    });
    for (const h of [
      'Retry-After',
      'RateLimit',
      'RateLimit-Policy',
      'Idempotent-Replayed',
      'Location',
      'X-Request-Id',
      'Deprecation',
      'Sunset',
      'Link',
    ]) {
      expect(CORS_EXPOSED_HEADERS.split(', ')).toContain(h);
    }
    // v1 of the products routes varies by Accept too (versioning): both stay.
    expect(res.headers.get('vary')).toBe('Accept, Origin');
    // …and the headers a browser script now may read are there.
    expect(res.headers.get('deprecation')).toBe('true');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('GraphQL and /docs answers carry them too', async () => {
    const graphql = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { origin: DEV, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect([graphql.status, await graphql.json()]).toEqual([200, { data: { __typename: 'Query' } }]);
    expect(graphql.headers.get('access-control-allow-origin')).toBe(DEV);
    expect(graphql.headers.get('access-control-allow-credentials')).toBe('true');
    expect(graphql.headers.get('vary')).toMatch(/\bOrigin\b/);
    const docs = await fetch(`${gw.url}/openapi.json`, { headers: { origin: APP } });
    expect(docs.status).toBe(200);
    expect(docs.headers.get('access-control-allow-origin')).toBe(APP);
    expect(docs.headers.get('vary')).toMatch(/\bOrigin\b/);
  });

  it('an error answer from the gateway itself carries them (the SDK reads Retry-After and X-Request-Id on errors)', async () => {
    const res = await fetch(`${gw.url}/no-such-route`, { headers: { origin: APP } });
    expect(res.status).toBe(404);
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-expose-headers')).toBe(CORS_EXPOSED_HEADERS);
  });

  it.each([
    ['an unlisted origin', () => gw, EVIL, 'Accept, Origin'],
    ['no Origin (curl, a server)', () => gw, undefined, 'Accept, Origin'],
    ['any origin without a list (production default)', () => prod, APP, 'Accept'],
  ])('%s is served, without a single CORS header and without credentials', async (_, g, origin, vary) => {
    const res = await fetch(`${g().url}/products`, { headers: origin ? { origin } : {} });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual({});
    expect(res.headers.get('vary')).toBe(vary);
  });
});

describe('WebSocket upgrades', () => {
  /** The HTTP status of the upgrade: 101 when the socket opened. */
  const upgrade = (g: RunningGateway, origin: string | undefined, host?: string) =>
    new Promise<number>((resolve, reject) => {
      const headers: Record<string, string> = {};
      if (origin !== undefined) headers.origin = origin;
      if (host !== undefined) headers.host = host;
      const ws = new WebSocket(`${g.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', { headers });
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
      ws.on('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode === 403) expect(JSON.parse(Buffer.concat(chunks).toString())).toEqual({ error: 'Origin not allowed' });
          resolve(res.statusCode ?? 0);
        });
      });
      ws.on('error', (err) => (err.message.startsWith('Unexpected server response') ? undefined : reject(err)));
    });

  it.each([
    ['a listed origin', () => gw, APP, 101],
    ['a listed pattern', () => gw, 'http://localhost:8080', 101],
    ['no Origin (a server, k6)', () => gw, undefined, 101],
    ['an unlisted origin', () => gw, EVIL, 403],
    ['Origin: null', () => gw, 'null', 403],
    ['an origin, with no list (production default)', () => prod, APP, 403],
    ['no Origin, with no list', () => prod, undefined, 101],
  ])('%s → %s', async (_, g, origin, status) => {
    expect(await upgrade(g(), origin)).toBe(status);
  });

  it("the gateway's own origin (the host the client addressed) may open one without being listed", async () => {
    expect(await upgrade(prod, 'https://api.halo.example', 'api.halo.example')).toBe(101);
    expect(await upgrade(prod, 'https://api.halo.example', 'other.halo.example')).toBe(403);
  });
});
