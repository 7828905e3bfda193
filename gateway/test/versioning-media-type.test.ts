import { TEST_JWT_SECRET } from '@halo/kit/testing';
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
 * The Content-Type of a version negotiated on an unversioned path (src/rest/versioning.ts): the
 * version's own media type, the one the OpenAPI document describes it under. Against a plain echo
 * upstream, which answers `application/json` as the services do.
 */

const V2 = 'application/vnd.halo.v2+json';

let echo: Awaited<ReturnType<typeof startEcho>>;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  echo = await startEcho();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({
    CONTENT_URL: echo.url,
    AUTH_URL: echo.url,
    CATALOG_URL: echo.url,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
    AUTH_GRPC_ADDR: `127.0.0.1:${await closedPort()}`,
  });
});

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
  supergraph?.remove();
});

async function typeOf(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string | null; upstream: string }> {
  const res = await fetch(gw.url + path, { headers });
  const { url } = (await res.json()) as { url: string };
  return { status: res.status, type: res.headers.get('content-type'), upstream: url };
}

it.each([
  ['/products/3', { accept: V2 }],
  ['/products/3', { accept: `application/json, ${V2};q=0.9` }],
  ['/products/3?version=2', {}],
])('%s %j: v2, labelled application/vnd.halo.v2+json', async (path, headers: Record<string, string>) => {
  expect(await typeOf(path, headers)).toEqual({ status: 200, type: V2, upstream: '/v2/products/3' });
});

it('v1, chosen or not, and v2 at /api/v2 stay application/json', async () => {
  expect((await typeOf('/products?version=1')).type).toBe('application/json');
  expect((await typeOf('/products', { accept: 'application/vnd.halo.v1+json' })).type).toBe('application/json');
  expect((await typeOf('/products')).type).toBe('application/json');
  expect(await typeOf('/api/v2/products', { accept: V2 })).toEqual({ status: 200, type: 'application/json', upstream: '/v2/products' });
});

it('an error of a negotiated version stays application/json (the document describes errors so)', async () => {
  expect(await typeOf('/products/3?version=2', { 'x-echo-status': '404' })).toEqual({
    status: 404,
    type: 'application/json',
    upstream: '/v2/products/3',
  });
});
