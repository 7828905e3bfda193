import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createLogger } from '@halo/kit/logging';
import { toHttpDate } from '@halo/kit/rest';
import { testIdentityEnv } from '@halo/kit/testing';
import { createGateway, type Gateway } from '../gateway/src/app';
import { loadGatewayConfig } from '../gateway/src/config';
import { V1_RETIREMENT } from '../services/catalog/src/rest/manifest';
import { validateOpenApi } from '../tools/src/openapi-validate';
import { bearer, gql, startE2ESystem } from './helpers';

/**
 * The REST contract as the services declare it, seen through the gateway of the real system:
 * the composed OpenAPI document and its rendered reference, the index, GraphiQL (development
 * only), the services' schema checks, and deprecation notices that come from catalog's manifest.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

beforeAll(async () => {
  // The gateway in the embedded development mode (GraphiQL on); the services as in the other suites.
  sys = await startE2ESystem({ envFor: { gateway: { HALO_ENV: 'development' } } });
  url = sys.url;
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

/** The `src`/`href` of every script and stylesheet of a page. */
const assetsOf = (html: string) => [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)="([^"]+)"/g)].map((m) => m[1]!);

async function expectAssetsFromGateway(html: string) {
  const assets = assetsOf(html);
  expect(assets.length).toBeGreaterThan(0);
  for (const path of assets) {
    // A path on this very address: no CDN, no other host.
    expect(path).toMatch(/^\/[^/]/);
    const res = await fetch(url + path);
    await res.arrayBuffer();
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
  }
}

describe('the API documents', () => {
  it('GET /openapi.json is the committed, composed document, and valid OpenAPI 3.1', async () => {
    const res = await fetch(`${url}/openapi.json`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toBe(readFileSync(resolve(__dirname, '../gateway/openapi.json'), 'utf8'));
    const doc = JSON.parse(text) as { openapi: string; paths: Record<string, Record<string, { deprecated?: boolean }>> };
    expect(doc.openapi).toBe('3.1.0');
    expect(validateOpenApi(doc)).toEqual({ valid: true, version: '3.1' });
    // Every service's routes are in it, v1 products marked deprecated.
    for (const path of ['/hello', '/auth/login', '/products', '/api/v2/products']) expect(doc.paths).toHaveProperty([path]);
    expect(doc.paths['/products']!.get!.deprecated).toBe(true);
    expect(doc.paths['/api/v2/products']!.get!.deprecated).toBeUndefined();
  });

  it('GET /docs is an HTML reference whose scripts and styles all load from the gateway', async () => {
    const res = await fetch(`${url}/docs`, { headers: { accept: BROWSER } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    await expectAssetsFromGateway(await res.text());
  });

  it('GET / lists the reference, the document and GraphQL', async () => {
    expect(await (await fetch(`${url}/`)).json()).toEqual({
      name: 'Halo API',
      links: { docs: '/docs', openapi: '/openapi.json', graphql: '/graphql', graphiql: '/graphql' },
    });
    const page = await (await fetch(`${url}/`, { headers: { accept: BROWSER } })).text();
    for (const href of ['/docs', '/openapi.json', '/graphql']) expect(page).toContain(`href="${href}"`);
  });
});

describe('GraphiQL', () => {
  it('a browser opening /graphql in development gets GraphiQL, served by the gateway', async () => {
    const res = await fetch(`${url}/graphql`, { headers: { accept: BROWSER } });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('Halo GraphiQL');
    await expectAssetsFromGateway(html);
    // And GraphQL itself still answers.
    const gql = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":"{ user(id: 2) { name } }"}',
    });
    expect(await gql.json()).toEqual({ data: { user: { name: 'Alice' } } });
  });

  it("GraphiQL's example query works without signing in, and its sign-in hint works as written", async () => {
    const html = await (await fetch(`${url}/graphql`, { headers: { accept: BROWSER } })).text();
    const block = /<script id="graphiql-options" type="application\/json">([^<]*)<\/script>/.exec(html);
    const { query } = JSON.parse(block![1]!) as { query: string };
    const { body: anonymous } = await gql(url, query);
    expect(anonymous.errors).toBeUndefined();
    expect(anonymous.data.posts.edges.length).toBeGreaterThan(0);
    expect(anonymous.data.posts.edges[0].node).toEqual({
      id: expect.any(String),
      title: expect.any(String),
      author: { name: expect.any(String) },
    });
    // The hint: the login body it shows, then its accessToken as a Bearer token.
    const body = /-d '([^']+)'/.exec(query)![1]!;
    const login = await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const { accessToken } = (await login.json()) as { accessToken: string };
    const header = JSON.parse(
      /\{ "Authorization": "Bearer <accessToken>" \}/.exec(query)![0].replace('<accessToken>', accessToken),
    ) as Record<string, string>;
    expect((await gql(url, '{ me { name } }', undefined, header)).body).toEqual({ data: { me: { name: 'Alice' } } });
  });

  it('not in production: the same services behind a production gateway show no IDE', async () => {
    const config = loadGatewayConfig({
      HALO_ENV: 'production',
      ...testIdentityEnv('gateway'),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
      CONTENT_URL: sys.direct('content'),
      AUTH_URL: sys.direct('auth'),
      CATALOG_URL: sys.direct('catalog'),
    });
    const prod: Gateway = createGateway(config, createLogger('gateway', 'silent'));
    try {
      const { port } = await prod.start();
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, { headers: { accept: BROWSER } });
      expect(res.status).toBe(400);
      expect(await res.text()).not.toMatch(/<html/i);
      expect((await fetch(`http://127.0.0.1:${port}/graphiql/assets/yoga-graphiql.umd.js`)).status).toBe(404);
      expect((await (await fetch(`http://127.0.0.1:${port}/`)).json()) as object).not.toHaveProperty(['links', 'graphiql']);
      // The REST reference is not a development tool: it stays.
      expect((await fetch(`http://127.0.0.1:${port}/docs`)).status).toBe(200);
    } finally {
      await prod.stop();
    }
  });
});

describe('the services’ schemas, through the gateway', () => {
  async function send(method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  }

  it.each([
    ['POST', '/greet', {}, {}, 'name is required'],
    ['POST', '/greet', { name: '   ' }, {}, 'name is required'],
    ['POST', '/auth/register', { name: 'Budi', email: 'not-an-email', password: 'password123' }, {}, 'email is invalid'],
    [
      'POST',
      '/auth/register',
      { name: 'Budi', email: 'budi@example.com', password: 'short' },
      {},
      'password must be at least 8 characters',
    ],
    [
      'POST',
      '/products',
      { name: 'Book', category: 'books', price: 19.999 },
      'admin',
      'price must be a number >= 0 with at most 2 decimals',
    ],
    ['POST', '/api/v2/products', { name: 'Book', category: 'books', price: 19.99 }, 'admin', 'price_cents is required'],
    ['PUT', '/products/1', { unknown: true }, 'admin', 'No fields to update'],
  ] as const)('%s %s %j → 400 naming the field', async (method, path, body, who, message) => {
    const res = await send(method, path, body, who === 'admin' ? bearer('1', 'Admin', 'admin') : {});
    expect(res).toEqual({ status: 400, body: { error: message } });
  });

  it('query and path schemas too: 400 `Invalid sort`, `Invalid id`', async () => {
    const sort = await fetch(`${url}/products?sort=colour`);
    expect({ status: sort.status, body: await sort.json() }).toEqual({ status: 400, body: { error: 'Invalid sort' } });
    const id = await fetch(`${url}/posts/abc`);
    expect({ status: id.status, body: await id.json() }).toEqual({ status: 400, body: { error: 'Invalid id' } });
  });

  it('who comes before what: a user with a broken body is still 403', async () => {
    const res = await send('POST', '/products', {}, bearer('2', 'Alice', 'user'));
    expect(res).toEqual({ status: 403, body: { error: 'Forbidden' } });
  });
});

describe('deprecation', () => {
  it('v1 of the products routes carries the notice catalog’s manifest declares; v2 none', async () => {
    const expected = ['true', toHttpDate(V1_RETIREMENT.sunset), `<${V1_RETIREMENT.link}>; rel="successor-version"`];
    for (const path of ['/products', '/products/1', '/api/v1/products']) {
      const res = await fetch(`${url}${path}`);
      await res.arrayBuffer();
      expect({ path, headers: [res.headers.get('deprecation'), res.headers.get('sunset'), res.headers.get('link')] }).toEqual({
        path,
        headers: expected,
      });
    }
    const v2 = await fetch(`${url}/api/v2/products`);
    await v2.arrayBuffer();
    expect([v2.headers.get('deprecation'), v2.headers.get('sunset'), v2.headers.get('link')]).toEqual([null, null, null]);
    // The guide it links to is served.
    expect((await fetch(`${url}${V1_RETIREMENT.link}`)).status).toBe(200);
  });
});
