import { AsyncLocalStorage } from 'node:async_hooks';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@halo/kit/logging';
import { closedPort, composeSupergraph, MINIMAL_SUBGRAPH_SDL, startGateway, tempSupergraph, until } from './helpers';

/**
 * Every request at the gateway carries the kit's request context (bound to the request): the
 * failure lines logged while serving it carry its id, also from callbacks of pooled upstream
 * sockets, and nothing enters AsyncLocalStorage (whose hooks would tax every request).
 */

let supergraph: ReturnType<typeof tempSupergraph>;
const lines: Record<string, unknown>[] = [];
const logger = createLogger('gateway', 'info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
const logged = (msg: string, requestId: string) => until(() => lines.find((l) => l.msg === msg && l.requestId === requestId) ?? null);

beforeAll(() => {
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
});
afterAll(() => supergraph.remove());

it('an upstream that refuses: the REST and the subgraph failure lines carry the request id', async () => {
  const gw = await startGateway({ CONTENT_URL: `http://127.0.0.1:${await closedPort()}`, SUPERGRAPH_PATH: supergraph.path }, logger);
  try {
    expect((await fetch(`${gw.url}/hello`, { headers: { 'x-request-id': 'ctx-refused' } })).status).toBe(503);
    await logged('upstream request failed', 'ctx-refused');
    await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'ctx-subgraph' },
      body: JSON.stringify({ query: '{ ping }' }),
    });
    await logged('subgraph unreachable', 'ctx-subgraph');
  } finally {
    await gw.stop();
  }
});

it('a pooled upstream socket reused by the next request logs with that request id', async () => {
  let n = 0;
  const upstream: Server = createServer((_req, res) => {
    // The first request answers (its socket goes back to the pool); the second never does.
    if (++n === 1) res.end('ok');
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  const gw = await startGateway(
    {
      CONTENT_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      SUPERGRAPH_PATH: supergraph.path,
      UPSTREAM_TIMEOUT_MS: '300',
    },
    logger,
  );
  try {
    expect((await fetch(`${gw.url}/hello`, { headers: { 'x-request-id': 'ctx-first' } })).status).toBe(200);
    expect((await fetch(`${gw.url}/hello`, { headers: { 'x-request-id': 'ctx-second' } })).status).toBe(504);
    await logged('upstream timed out', 'ctx-second');
  } finally {
    await gw.stop();
    upstream.closeAllConnections();
    upstream.close();
  }
});

it('serves REST and GraphQL without entering AsyncLocalStorage (whose hooks would tax every request)', async () => {
  const gw = await startGateway({ CONTENT_URL: `http://127.0.0.1:${await closedPort()}`, SUPERGRAPH_PATH: supergraph.path }, logger);
  const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
  const enterWith = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');
  try {
    await fetch(`${gw.url}/hello`, { headers: { 'x-request-id': 'ctx-no-als' } });
    await logged('upstream request failed', 'ctx-no-als');
    await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'ctx-no-als-gql' },
      body: JSON.stringify({ query: '{ ping }' }),
    });
    await logged('subgraph unreachable', 'ctx-no-als-gql');
    expect([run.mock.calls.length, enterWith.mock.calls.length]).toEqual([0, 0]);
  } finally {
    run.mockRestore();
    enterWith.mockRestore();
    await gw.stop();
  }
});
