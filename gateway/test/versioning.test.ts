import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import type { RouteDef, RouteTableFile } from '../src/rest/routes';
import { createVersioning, toHttpDate } from '../src/rest/versioning';
import {
  closedPort,
  composeSupergraph,
  MINIMAL_SUBGRAPH_SDL,
  startEcho,
  startGateway,
  tempRouteTable,
  tempSupergraph,
  type Echoed,
  type RunningGateway,
} from './helpers';

/**
 * REST API versioning at the gateway, against a plain echo upstream standing in for every service:
 * which upstream path each way of choosing a version reaches, and which headers come back.
 */

const SUNSET = 'Wed, 01 Sep 2027 00:00:00 GMT';
const LINK = '</docs/migrations/v1-to-v2.md>; rel="successor-version"';
const V2 = 'application/vnd.halo.v2+json';

let echo: Awaited<ReturnType<typeof startEcho>>;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

async function gatewayWith(env: Record<string, string> = {}): Promise<RunningGateway> {
  return startGateway({
    CONTENT_URL: echo.url,
    AUTH_URL: echo.url,
    CATALOG_URL: echo.url,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
    AUTH_GRPC_ADDR: `127.0.0.1:${await closedPort()}`,
    GRPC_DEADLINE_MS: '300',
    ...env,
  });
}

beforeAll(async () => {
  echo = await startEcho();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: MINIMAL_SUBGRAPH_SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await gatewayWith();
});

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
  supergraph?.remove();
});

async function call(path: string, init: RequestInit = {}, g: RunningGateway = gw) {
  const res = await fetch(g.url + path, init);
  const text = await res.text();
  const echoed = res.headers.get('x-echo') === 'yes' ? (JSON.parse(text) as Echoed) : null;
  return {
    status: res.status,
    headers: res.headers,
    /** The path + query the upstream saw; null when nothing was forwarded. */
    upstream: echoed?.url ?? null,
    echoed,
    body: echoed ? null : text ? (JSON.parse(text) as Record<string, unknown>) : null,
  };
}

/** The deprecation notice of v1 of the products routes, or its absence. */
function expectDeprecated(headers: Headers, yes: boolean) {
  if (yes) {
    expect(headers.get('deprecation')).toBe('true');
    expect(headers.get('sunset')).toBe(SUNSET);
    expect(headers.get('link')).toBe(LINK);
  } else {
    for (const h of ['deprecation', 'sunset', 'link']) expect(headers.get(h)).toBeNull();
  }
}

describe('unversioned paths are version 1', () => {
  it('/products goes to the service unchanged, with the v1 deprecation notice and Vary: Accept', async () => {
    const res = await call('/products?page=2&category=a%20b&sort=price');
    expect(res.status).toBe(200);
    expect(res.upstream).toBe('/products?page=2&category=a%20b&sort=price');
    expectDeprecated(res.headers, true);
    expect(res.headers.get('vary')).toBe('Accept');
  });

  it('every products route carries the notice, whatever the method and the answer', async () => {
    const admin = { authorization: `Bearer ${signAccessToken({ sub: '1', name: 'a', role: 'admin' }, TEST_JWT_SECRET, 60)}` };
    for (const [method, path, status] of [
      ['GET', '/products/7', 200],
      ['PUT', '/products/7', 200],
      ['DELETE', '/products/7', 200],
      ['POST', '/products', 200],
      ['HEAD', '/products', 200],
    ] as const) {
      const res = await fetch(gw.url + path, { method, headers: admin });
      await res.arrayBuffer();
      expect(res.status).toBe(status);
      expectDeprecated(res.headers, true);
    }
    // The upstream's own status passes through with the notice on it.
    const missing = await call('/products/999', { headers: { 'x-echo-status': '404' } });
    expect(missing.status).toBe(404);
    expectDeprecated(missing.headers, true);
  });

  it('a route that exists only in v1 gets no version headers at all', async () => {
    for (const path of ['/hello', '/posts/1', '/users/2/posts']) {
      const res = await call(path);
      expect(res.upstream).toBe(path);
      expectDeprecated(res.headers, false);
      expect(res.headers.get('vary')).toBeNull();
    }
  });

  it('a protected v1 route refused at the gateway still carries the notice', async () => {
    const before = echo.count();
    const res = await call('/products', { method: 'POST' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Token required' });
    expectDeprecated(res.headers, true);
    expect(echo.count()).toBe(before);
  });
});

describe('/api/v1/<path> serves exactly the unversioned route', () => {
  it.each([
    ['/api/v1/products', '/products'],
    ['/api/v1/products?page=3&limit=5', '/products?page=3&limit=5'],
    ['/api/v1/products/42', '/products/42'],
  ])('%s → %s, deprecated', async (path, upstream) => {
    const res = await call(path);
    expect(res.upstream).toBe(upstream);
    expectDeprecated(res.headers, true);
  });

  it('other routes too, without a notice', async () => {
    const res = await call('/api/v1/hello');
    expect(res.upstream).toBe('/hello');
    expectDeprecated(res.headers, false);
    expect((await call('/api/v1/posts/5/comments')).upstream).toBe('/posts/5/comments');
  });

  it('protection as for the unversioned path', async () => {
    const before = echo.count();
    for (const path of ['/api/v1/profile', '/api/v1/products/1']) {
      const res = await call(path, { method: path.endsWith('profile') ? 'GET' : 'DELETE' });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 401, body: { error: 'Token required' } });
    }
    expect(echo.count()).toBe(before);
  });

  it('405 and 404 as for the unversioned path', async () => {
    const wrong = await call('/api/v1/hello', { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    for (const path of ['/api/v1/nope', '/api/v1', '/api/v1/', '/api/v1//products']) {
      const res = await call(path);
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: { error: 'Not found' } });
    }
  });
});

describe('version 2', () => {
  it.each([
    ['/api/v2/products', '/v2/products'],
    ['/api/v2/products?page=2&category=games', '/v2/products?page=2&category=games'],
    ['/api/v2/products/7', '/v2/products/7'],
  ])('%s → the service’s %s, not deprecated, Vary: Accept', async (path, upstream) => {
    const res = await call(path);
    expect(res.status).toBe(200);
    expect(res.upstream).toBe(upstream);
    expectDeprecated(res.headers, false);
    expect(res.headers.get('vary')).toBe('Accept');
  });

  it('keeps method, body and auth: a v2 write needs a caller and reaches /v2 with its body', async () => {
    const before = echo.count();
    const anonymous = await call('/api/v2/products', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(echo.count()).toBe(before);
    const token = signAccessToken({ sub: '1', name: 'a', role: 'admin' }, TEST_JWT_SECRET, 60);
    const body = JSON.stringify({ name: 'x', category: 'y', price_cents: 1999 });
    const res = await call('/api/v2/products', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body,
    });
    expect(res.echoed).toMatchObject({ method: 'POST', url: '/v2/products', headers: { authorization: `Bearer ${token}` } });
    expect(Buffer.from(res.echoed!.body, 'base64').toString()).toBe(body);
  });

  it('a route without a v2 is 404 Not found, and nothing is forwarded', async () => {
    const before = echo.count();
    for (const path of ['/api/v2/hello', '/api/v2/posts/1', '/api/v2/profile', '/api/v2', '/api/v2/']) {
      const res = await call(path);
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: { error: 'Not found' } });
    }
    expect(echo.count()).toBe(before);
  });

  it('a wrong method on a v2 path is 405 with the v2 Allow', async () => {
    const res = await call('/api/v2/products', { method: 'PATCH' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
  });
});

describe('choosing the version on an unversioned path', () => {
  it.each([V2, `${V2}; charset=utf-8`, `application/json, ${V2};q=0.9`, 'Application/VND.HALO.V2+JSON', 'application/vnd.halo.v2'])(
    'Accept: %s → v2',
    async (accept) => {
      const res = await call('/products/3?x=1', { headers: { accept } });
      expect(res.upstream).toBe('/v2/products/3?x=1');
      expectDeprecated(res.headers, false);
      expect(res.headers.get('vary')).toBe('Accept');
    },
  );

  it('Accept v1 is v1, deprecated', async () => {
    const res = await call('/products', { headers: { accept: 'application/vnd.halo.v1+json' } });
    expect(res.upstream).toBe('/products');
    expectDeprecated(res.headers, true);
  });

  it('Accept without a Halo version (application/json, */*, vnd.halo+json) is the default', async () => {
    for (const accept of ['application/json', '*/*', 'application/vnd.halo+json']) {
      const res = await call('/products', { headers: { accept } });
      expect(res.upstream).toBe('/products');
      expectDeprecated(res.headers, true);
    }
  });

  it.each([
    ['/products?version=2', '/v2/products'],
    ['/products?page=2&version=2&category=a%20b', '/v2/products?page=2&category=a%20b'],
    ['/products/9?version=2', '/v2/products/9'],
    ['/products?version=1&page=2', '/products?page=2'],
  ])('%s → %s (the selector is not forwarded)', async (path, upstream) => {
    const res = await call(path);
    expect(res.upstream).toBe(upstream);
    expectDeprecated(res.headers, !upstream.startsWith('/v2'));
    expect(res.headers.get('vary')).toBe('Accept');
  });

  it('a parameter that merely ends in "version" is not a selector', async () => {
    const res = await call('/products?subversion=2&aversion=x');
    expect(res.upstream).toBe('/products?subversion=2&aversion=x');
    expectDeprecated(res.headers, true);
  });

  it('selectors that agree are fine', async () => {
    expect((await call('/api/v2/products?version=2', { headers: { accept: V2 } })).upstream).toBe('/v2/products');
    expect((await call('/api/v1/products?version=1')).upstream).toBe('/products');
  });

  it('Accept and ?version=2 on a route without a v2 → 404', async () => {
    const byAccept = await call('/hello', { headers: { accept: V2 } });
    expect({ status: byAccept.status, body: byAccept.body }).toEqual({ status: 404, body: { error: 'Not found' } });
    expect(byAccept.headers.get('vary')).toBe('Accept');
    expect((await call('/posts/1?version=2')).status).toBe(404);
    // …and the next plain 404 is not marked as varying by Accept.
    expect((await call('/nope')).headers.get('vary')).toBeNull();
  });
});

describe('unknown, malformed and conflicting versions → 400, nothing forwarded', () => {
  it.each([
    ['/api/v9/products', {}],
    ['/api/v3/hello', {}],
    ['/api/v0/products', {}],
    ['/api/v2x/products', {}],
    ['/api/v1.5/products', {}],
    ['/api/v01/products', {}],
    ['/api/v99999999999/products', {}],
    ['/products', { accept: 'application/vnd.halo.v9+json' }],
    ['/products', { accept: 'application/vnd.halo.vabc+json' }],
    ['/products', { accept: 'application/vnd.halo.v+json' }],
    ['/hello', { accept: 'application/vnd.halo.v2.1+json' }],
    ['/products?version=abc', {}],
    ['/products?version=9', {}],
    ['/products?version=', {}],
    ['/products?version=2.0', {}],
    ['/products?version=02', {}],
    ['/products?version=-1', {}],
    ['/nope?version=9', {}],
  ])('%s %j → 400 Unsupported API version', async (path, headers: Record<string, string>) => {
    const before = echo.count();
    const res = await call(path, { headers });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: 'Unsupported API version' });
    expect(echo.count()).toBe(before);
    expect(res.headers.get('vary')).toBe(headers.accept ? 'Accept' : null);
  });

  it.each([
    ['/api/v2/products?version=1', {}],
    ['/api/v1/products', { accept: V2 }],
    ['/products?version=2', { accept: 'application/vnd.halo.v1+json' }],
    ['/products?version=1&version=2', {}],
    ['/products', { accept: `${V2}, application/vnd.halo.v1+json` }],
  ])('%s %j → 400 Conflicting API versions', async (path, headers: Record<string, string>) => {
    const res = await call(path, { headers });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'Conflicting API versions' } });
  });

  it('paths that only look like a version are ordinary paths (404)', async () => {
    for (const path of ['/api/videos', '/api/version/2', '/api/v/products', '/api/V2/products', '/apiv2/products']) {
      expect({ path, status: (await call(path)).status }).toEqual({ path, status: 404 });
    }
  });
});

describe('the migration guide behind the Link header', () => {
  it('is served by the gateway, so the link resolves', async () => {
    const link = (await call('/products')).headers.get('link')!;
    const target = /^<([^>]+)>/.exec(link)![1]!;
    const res = await fetch(new URL(target, gw.url));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('price_cents');
    expect(text).toContain(SUNSET);
    expect((await fetch(new URL(target, gw.url), { method: 'HEAD' })).status).toBe(200);
    expect((await call(target, { method: 'POST' })).status).toBe(405);
    expect((await call('/docs/migrations/nope.md')).status).toBe(404);
    expect((await call('/docs/migrations/../../package.json')).status).toBe(404);
  });
});

describe('configuration: the notice comes from the owning service (its manifest, through the route table)', () => {
  const products = (t: RouteTableFile) => t.routes.filter((r) => r.service === 'catalog');

  it('the sunset and link are the route table’s; its ISO dates are composed into HTTP-dates', async () => {
    const table = tempRouteTable((t) => {
      for (const r of products(t))
        r.deprecated = { 1: { sunset: toHttpDate('2028-03-01')!, link: 'https://docs.example.com/halo/v1-to-v2' } };
    });
    const other = await gatewayWith({ ROUTES_PATH: table.path });
    try {
      const res = await call('/products', {}, other);
      expect(res.headers.get('sunset')).toBe('Wed, 01 Mar 2028 00:00:00 GMT');
      expect(res.headers.get('link')).toBe('<https://docs.example.com/halo/v1-to-v2>; rel="successor-version"');
      expect(res.headers.get('deprecation')).toBe('true');
    } finally {
      await other.stop();
      table.remove();
    }
  });

  it('a table without the notice has none; v2 and Vary stay', async () => {
    const table = tempRouteTable((t) => {
      for (const r of products(t)) delete r.deprecated;
    });
    const other = await gatewayWith({ ROUTES_PATH: table.path });
    try {
      const v1 = await call('/products', {}, other);
      expectDeprecated(v1.headers, false);
      expect(v1.headers.get('vary')).toBe('Accept');
      expect((await call('/api/v2/products', {}, other)).upstream).toBe('/v2/products');
    } finally {
      await other.stop();
      table.remove();
    }
  });

  it.each([
    [
      'a sunset that is no HTTP-date',
      (t: RouteTableFile) => (products(t)[0]!.deprecated = { 1: { sunset: '2027-09-01', link: '/x' } }),
      /must be an HTTP-date/,
    ],
    ['a relative link', (t: RouteTableFile) => (products(t)[0]!.deprecated = { 1: { sunset: SUNSET, link: 'docs/v2.md' } }), /link/],
    ['a version without its upstream', (t: RouteTableFile) => delete t.versions['2'], /lists API version 2, which is not configured/],
  ])('a route table with %s stops start-up with a line naming the file', async (_what, change, message) => {
    const table = tempRouteTable(change);
    try {
      await expect(gatewayWith({ ROUTES_PATH: table.path })).rejects.toThrow(
        /^Cannot load the route table at .*routes\.json \(ROUTES_PATH\): /,
      );
      await expect(gatewayWith({ ROUTES_PATH: table.path })).rejects.toThrow(message);
    } finally {
      table.remove();
    }
  });

  it('HTTP-dates are checked, ISO dates converted', () => {
    expect(toHttpDate(SUNSET)).toBe(SUNSET);
    expect(toHttpDate('2027-09-01')).toBe(SUNSET);
    expect(toHttpDate('2027-09-01T00:00:00Z')).toBe(SUNSET);
    for (const bad of [
      '',
      '1',
      'Wed, 1 Sep 2027 00:00:00 GMT',
      'Wed, 01 Sep 2027 00:00:00 UTC',
      '2027-13-01',
      '2027-02-30T00:00:00Z',
      '2027-09-01T00:00:00+07:00',
    ]) {
      expect(toHttpDate(bad)).toBeNull();
    }
  });

  it('a route that names a version nobody configured is refused when the table is built', () => {
    const routes: RouteDef[] = [{ service: 'catalog', method: 'GET', path: '/things', versions: [1, 3] }];
    expect(() => createVersioning(routes, { defaultVersion: 1, versions: { 1: { upstreamPrefix: '' } } })).toThrow(
      'GET /things lists API version 3, which is not configured',
    );
    expect(() => createVersioning([], { defaultVersion: 2, versions: { 1: { upstreamPrefix: '' } } })).toThrow(/default/);
  });

  it('versions and prefixes are data: a v3 of one route maps where its config says', async () => {
    const notice = { 1: { sunset: SUNSET, link: 'https://x.example/guide' } };
    const routes: RouteDef[] = [
      { service: 'catalog', method: 'GET', path: '/things', versions: [1, 3], deprecated: notice },
      { service: 'catalog', method: 'GET', path: '/other', deprecated: notice },
    ];
    const v = createVersioning(routes, {
      defaultVersion: 1,
      versions: {
        1: { upstreamPrefix: '' },
        3: { upstreamPrefix: '/internal/v3' },
      },
    });
    const req = (url: string, accept?: string) => ({ method: 'GET', url, headers: accept ? { accept } : {} }) as never;
    const m = (url: string, accept?: string) => {
      const q = url.indexOf('?');
      return v.match(req(url, accept), url, q, q === -1 ? url : url.slice(0, q));
    };
    expect(m('/api/v3/things?a=1')).toMatchObject({ kind: 'route', url: '/internal/v3/things?a=1', headers: { vary: 'Accept' } });
    expect(m('/things', 'application/vnd.halo.v3+json')).toMatchObject({ kind: 'route', url: '/internal/v3/things' });
    expect(m('/other')).toMatchObject({
      kind: 'route',
      headers: { deprecation: 'true', link: '<https://x.example/guide>; rel="successor-version"' },
    });
    expect(m('/other').url).toBeUndefined();
    expect(m('/api/v3/other')).toEqual({ kind: 'not-found' });
    expect(m('/api/v2/things')).toEqual({ kind: 'unsupported-version', error: 'Unsupported API version' });
  });
});
