import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { getIntrospectionQuery } from 'graphql';
import { capturingLogger } from '@halo/kit/testing';
import { isGatewayPath } from '@halo/kit/rest';
import { DEFAULT_OPENAPI_PATH } from '../src/config';
import { GRAPHIQL_ORIGIN } from '../src/docs/pages';
import {
  composeSupergraph,
  MINIMAL_SUBGRAPH_SDL,
  startEcho,
  startGateway,
  tempRouteTable,
  tempSupergraph,
  until,
  type RunningGateway,
} from './helpers';

/**
 * The gateway's own pages: the composed OpenAPI document, the REST reference rendered from it,
 * GraphiQL for browsers in development, the index — every asset from the gateway itself — and
 * the hot reload of the composed files.
 */

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const committedOpenApi = readFileSync(DEFAULT_OPENAPI_PATH, 'utf8');

let supergraph: ReturnType<typeof tempSupergraph>;
let echo: Awaited<ReturnType<typeof startEcho>>;
let dev: RunningGateway;
let prod: RunningGateway;

beforeAll(async () => {
  echo = await startEcho();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
  dev = await startGateway({ HALO_ENV: 'development', SUPERGRAPH_PATH: supergraph.path, CONTENT_URL: echo.url });
  prod = await startGateway({ HALO_ENV: 'production', SUPERGRAPH_PATH: supergraph.path, CONTENT_URL: echo.url });
});

afterAll(async () => {
  await dev?.stop();
  await prod?.stop();
  await echo?.close();
  supergraph?.remove();
});

/** The `src`/`href` of every script and stylesheet of a page. */
const assetsOf = (html: string) => [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)="([^"]+)"/g)].map((m) => m[1]!);

/** Loads every asset a page names, from the gateway it came from; all must be there. */
async function expectSelfHosted(g: RunningGateway, html: string) {
  expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  const assets = assetsOf(html);
  expect(assets.length).toBeGreaterThan(0);
  for (const path of assets) {
    expect(path.startsWith('/')).toBe(true);
    expect({ path, reserved: isGatewayPath(path) }).toEqual({ path, reserved: true });
    const res = await fetch(g.url + path);
    const body = await res.arrayBuffer();
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    expect(res.headers.get('content-type')).toMatch(path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
    expect(body.byteLength).toBeGreaterThan(0);
  }
  return assets;
}

describe('GET /openapi.json', () => {
  it('serves the composed document, revalidated by ETag', async () => {
    const res = await fetch(`${prod.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(await res.text()).toBe(committedOpenApi);
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const again = await fetch(`${prod.url}/openapi.json`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
  });

  it('is read-only', async () => {
    const res = await fetch(`${prod.url}/openapi.json`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await res.json()).toEqual({ error: 'Method not allowed' });
  });
});

describe('GET /docs', () => {
  it('renders the document with Swagger UI, every asset served by the gateway itself', async () => {
    const res = await fetch(`${prod.url}/docs`, { headers: { accept: BROWSER } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    // The browser is told, too, that nothing may come from elsewhere.
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self';/);
    const html = await res.text();
    const assets = await expectSelfHosted(prod, html);
    expect(assets).toEqual(['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/docs.js']);
    const init = await (await fetch(`${prod.url}/docs/assets/docs.js`)).text();
    expect(init).toContain('url: "/openapi.json"');
    expect(init).toContain('validatorUrl: null');
  });

  it('sends the bundle compressed to a client that accepts gzip, and whole to one that does not', async () => {
    const file = readFileSync(require.resolve('swagger-ui-dist/swagger-ui-bundle.js'));
    // node:http, which (unlike fetch) hands over the bytes as sent.
    const zipped = await new Promise<{ headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      get(`${prod.url}/docs/assets/swagger-ui-bundle.js`, { headers: { 'accept-encoding': 'gzip, br' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers['cache-control']).toBe('public, max-age=3600');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length);
    expect(zipped.body.length).toBeLessThan(file.length / 2);
    expect(gunzipSync(zipped.body).equals(file)).toBe(true);
    const plain = await fetch(`${prod.url}/docs/assets/swagger-ui-bundle.js`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(Buffer.from(await plain.arrayBuffer()).equals(file)).toBe(true);
  });

  it('an unknown asset is 404, like any unknown path', async () => {
    const res = await fetch(`${prod.url}/docs/assets/../../package.json`);
    expect(res.status).toBe(404);
    expect((await fetch(`${prod.url}/docs/assets/index.html`)).status).toBe(404);
  });
});

describe('GET /', () => {
  it('lists the reference, the document and GraphQL, as JSON for a client', async () => {
    const res = await fetch(`${prod.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('vary')).toBe('Accept');
    expect(await res.json()).toEqual({ name: 'Halo API', links: { docs: '/docs', openapi: '/openapi.json', graphql: '/graphql' } });
    expect(await (await fetch(`${dev.url}/`)).json()).toMatchObject({ links: { graphiql: '/graphql' } });
  });

  it('and as a page for a browser', async () => {
    const res = await fetch(`${prod.url}/`, { headers: { accept: BROWSER } });
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    for (const href of ['/docs', '/openapi.json', '/graphql']) expect(html).toContain(`href="${href}"`);
  });
});

describe('GraphiQL at /graphql', () => {
  it('in development, a browser gets GraphiQL, its assets from the gateway', async () => {
    const res = await fetch(`${dev.url}/graphql`, { headers: { accept: BROWSER } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    // Development allows loopback origins (CORS_ORIGINS' default there), so answers vary by Origin too.
    expect(res.headers.get('vary')).toBe('Accept, Origin');
    const html = await res.text();
    expect(html).toContain('<title>Halo GraphiQL</title>');
    await expectSelfHosted(dev, html);
    // The editor's workers too.
    const env = await (await fetch(`${dev.url}/graphiql/assets/environment.js`)).text();
    for (const worker of ['editor.worker.bundle.js', 'json.worker.bundle.js', 'graphql.worker..bundle.js']) {
      expect(env).toContain(worker);
      expect((await fetch(`${dev.url}/graphiql/assets/monacoeditorwork/${worker}`)).status).toBe(200);
    }
  });

  it('opens with an example query and how to send a token, as options in the page that graphiql.js reads', async () => {
    // Whatever Host the request names, the page is the same: the origin is the browser's to fill in.
    const html = await (await fetch(`${dev.url}/graphql`, { headers: { accept: BROWSER, host: 'evil.example' } })).text();
    const block = /<script id="graphiql-options" type="application\/json">([^<]*)<\/script>/.exec(html);
    const options = JSON.parse(block![1]!) as { endpoint: string; query: string; subscriptionsProtocol: string };
    // `query`, the option Yoga's GraphiQL opens on (it opens on its welcome comment without it).
    expect(options).toMatchObject({ endpoint: '/graphql', subscriptionsProtocol: 'WS' });
    expect(options.query).toContain('posts(first: 5)');
    expect(options.query).toContain('POST /auth/login');
    expect(options.query).toContain('{ "Authorization": "Bearer <accessToken>" }');
    expect(options.query).toContain(`curl -s -X POST ${GRAPHIQL_ORIGIN}/auth/login`);
    expect(html).not.toMatch(/127\.0\.0\.1:4000|evil\.example/);
    const init = await (await fetch(`${dev.url}/graphiql/assets/graphiql.js`)).text();
    expect(init).toContain("JSON.parse(document.getElementById('graphiql-options').textContent)");
    expect(init).toContain('location.origin');
  });

  it('in development, operations still go to GraphQL (POST, and GET asking for JSON)', async () => {
    const post = await fetch(`${dev.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: BROWSER },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(await post.json()).toEqual({ data: { __typename: 'Query' } });
    const get = await fetch(`${dev.url}/graphql?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { accept: 'application/json' },
    });
    expect(await get.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('in production, no IDE: no page (and no CDN landing page), no assets', async () => {
    const res = await fetch(`${prod.url}/graphql`, { headers: { accept: BROWSER } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await res.text();
    expect(body).not.toMatch(/<html|graphiql|apollographql\.com/i);
    expect((await fetch(`${prod.url}/graphiql/assets/yoga-graphiql.umd.js`)).status).toBe(404);
    expect(await (await fetch(`${prod.url}/graphql?query=${encodeURIComponent('{ __typename }')}`)).json()).toEqual({
      data: { __typename: 'Query' },
    });
  });
});

describe('introspection (GRAPHQL_INTROSPECTION)', () => {
  const introspect = (url: string, query = getIntrospectionQuery()) =>
    fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  type Answer = { data?: { __schema: { queryType: unknown } }; errors: { message: string; extensions: { code: string } }[] };
  const json = async (res: Response) => (await res.json()) as Answer;

  it('is on in development, where GraphiQL reads the schema with it', async () => {
    const res = await introspect(dev.url);
    expect(res.status).toBe(200);
    expect((await json(res)).data!.__schema.queryType).toMatchObject({ name: 'Query' });
  });

  it('is off by default in production: 400 INTROSPECTION_DISABLED, over POST and GET, __type too; __typename still answers', async () => {
    const post = await introspect(prod.url);
    expect(post.status).toBe(400);
    const body = await json(post);
    expect(body.data).toBeUndefined();
    expect(body.errors[0]).toMatchObject({
      message: 'GraphQL introspection is disabled on this server (GRAPHQL_INTROSPECTION)',
      extensions: { code: 'INTROSPECTION_DISABLED' },
    });
    const get = await fetch(`${prod.url}/graphql?query=${encodeURIComponent('{ __type(name: "Query") { name } }')}`);
    expect(get.status).toBe(400);
    expect((await json(get)).errors[0]!.extensions.code).toBe('INTROSPECTION_DISABLED');
    expect(((await (await introspect(prod.url, '{ __typename }')).json()) as { data: unknown }).data).toEqual({ __typename: 'Query' });
  });

  it('can be switched on in production, and off in development', async () => {
    const on = await startGateway({ HALO_ENV: 'production', GRAPHQL_INTROSPECTION: 'true', SUPERGRAPH_PATH: supergraph.path });
    const off = await startGateway({ HALO_ENV: 'development', GRAPHQL_INTROSPECTION: 'false', SUPERGRAPH_PATH: supergraph.path });
    try {
      expect((await introspect(on.url)).status).toBe(200);
      expect((await json(await introspect(off.url))).errors[0]!.extensions.code).toBe('INTROSPECTION_DISABLED');
    } finally {
      await Promise.all([on.stop(), off.stop()]);
    }
  });
});

describe('hot reload of the composed files', () => {
  it('a new route table is served without a restart; a broken one is refused and the last good one stays', async () => {
    const table = tempRouteTable();
    const { logger, lines } = capturingLogger('info', 'gateway');
    const g = await startGateway(
      { SUPERGRAPH_PATH: supergraph.path, CONTENT_URL: echo.url, ROUTES_PATH: table.path, LOG_LEVEL: 'info' },
      logger,
    );
    try {
      expect((await fetch(`${g.url}/things/7`)).status).toBe(404);
      // What `npm run compose` writes when content declares a route.
      table.write((t) => t.routes.push({ service: 'content', method: 'GET', path: '/things/:id' }));
      await until(async () => (await fetch(`${g.url}/things/7`)).status === 200);
      expect(JSON.parse(await (await fetch(`${g.url}/things/7`)).text())).toMatchObject({ url: '/things/7' });
      expect(lines.some((l) => l.msg === 'route table reloaded')).toBe(true);

      writeFileSync(table.path, '{"routes": "not a table"}');
      await until(() => lines.some((l) => l.msg === 'route table rejected; keeping the previous one'));
      expect((await fetch(`${g.url}/things/7`)).status).toBe(200);
      expect((await fetch(`${g.url}/hello`)).status).toBe(200);
    } finally {
      await g.stop();
      table.remove();
    }
  });

  it('a new OpenAPI document is served without a restart; a broken one is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'halo-openapi-'));
    const path = join(dir, 'openapi.json');
    writeFileSync(path, committedOpenApi);
    const g = await startGateway({ SUPERGRAPH_PATH: supergraph.path, OPENAPI_PATH: path });
    try {
      const next = JSON.stringify({ ...JSON.parse(committedOpenApi), info: { title: 'Next', version: '2' } });
      writeFileSync(path, next);
      await until(async () => (await (await fetch(`${g.url}/openapi.json`)).text()) === next);
      writeFileSync(path, '{"swagger": "2.0"}');
      await new Promise((r) => setTimeout(r, 2_500));
      expect(await (await fetch(`${g.url}/openapi.json`)).text()).toBe(next);
    } finally {
      await g.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a missing or invalid file stops start-up with a line naming it', async () => {
    await expect(startGateway({ SUPERGRAPH_PATH: supergraph.path, OPENAPI_PATH: '/nonexistent/openapi.json' })).rejects.toThrow(
      /^Cannot load the OpenAPI document at \/nonexistent\/openapi.json \(OPENAPI_PATH\): /,
    );
    await expect(startGateway({ SUPERGRAPH_PATH: supergraph.path, ROUTES_PATH: '/nonexistent/routes.json' })).rejects.toThrow(
      /^Cannot load the route table at \/nonexistent\/routes.json \(ROUTES_PATH\): /,
    );
  });
});
