import { readFileSync } from 'node:fs';
import { createRouteTable, DEFAULT_ROUTES_PATH, parseRouteTable, type RouteDef } from '../src/rest/routes';

/** The committed route table, composed from the services' manifests (`npm run compose`). */
const ROUTES = parseRouteTable(readFileSync(DEFAULT_ROUTES_PATH, 'utf8')).routes;

describe('route table', () => {
  const table = createRouteTable(ROUTES);

  it('matches every declared route, with its params', () => {
    for (const route of ROUTES) {
      const path = route.path.replace(/:\w+/g, '12');
      const match = table.match(route.method, path);
      expect(match).toMatchObject({ kind: 'route', route });
    }
    expect(table.match('GET', '/users/7/posts')).toMatchObject({ params: { userId: '7' } });
  });

  it('serves HEAD where GET is, and only there', () => {
    expect(table.match('HEAD', '/hello')).toMatchObject({ kind: 'route', route: { method: 'GET' } });
    expect(table.match('HEAD', '/greet')).toEqual({ kind: 'method-not-allowed', allow: 'POST' });
  });

  it('tells a wrong method on a known path from an unknown path', () => {
    expect(table.match('PUT', '/posts/1')).toEqual({ kind: 'method-not-allowed', allow: 'GET, HEAD' });
    expect(table.match('GET', '/posts/1/likes')).toEqual({ kind: 'not-found' });
    expect(table.match('GET', '/hello/')).toEqual({ kind: 'not-found' });
    expect(table.match('GET', '/Hello')).toEqual({ kind: 'not-found' });
  });

  it('lists every method of a path in Allow', () => {
    const routes: RouteDef[] = [
      { service: 'content', method: 'GET', path: '/things/:id' },
      { service: 'content', method: 'PUT', path: '/things/:id' },
      { service: 'content', method: 'DELETE', path: '/things/:id' },
    ];
    expect(createRouteTable(routes).match('POST', '/things/1')).toEqual({
      kind: 'method-not-allowed',
      allow: 'GET, HEAD, PUT, DELETE',
    });
  });

  it('refuses a duplicate route', () => {
    const route: RouteDef = { service: 'content', method: 'GET', path: '/hello' };
    expect(() => createRouteTable([route, route])).toThrow('Duplicate route: GET /hello');
  });
});

describe('the composed route table file', () => {
  it('holds every public route, with its owner, protection and versions', () => {
    const key = (r: RouteDef) =>
      `${r.method} ${r.path} → ${r.service}${r.auth ? ' (auth)' : ''}${r.versions ? ` v${r.versions.join(',')}` : ''}`;
    expect(ROUTES.map(key).sort()).toEqual(
      [
        'POST /auth/register → auth',
        'POST /auth/login → auth',
        'POST /auth/refresh → auth',
        'POST /auth/logout → auth',
        'GET /profile → auth (auth)',
        'GET /auth/api-keys → auth (auth)',
        'POST /auth/api-keys → auth (auth)',
        'DELETE /auth/api-keys/:id → auth (auth)',
        'GET /auth/oauth/:provider/start → auth',
        'GET /auth/oauth/:provider/callback → auth',
        'GET /hello → content',
        'POST /greet → content',
        'GET /users/:userId/posts → content',
        'GET /posts/:id → content',
        'GET /posts/:id/comments → content',
        'GET /products → catalog v1,2',
        'POST /products → catalog (auth) v1,2',
        'GET /products/:id → catalog v1,2',
        'PUT /products/:id → catalog (auth) v1,2',
        'DELETE /products/:id → catalog (auth) v1,2',
        'POST /api/payments → payments (auth)',
        'GET /api/payments/:id → payments (auth)',
        'POST /api/orders → payments (auth)',
        'GET /api/orders → payments (auth)',
        'GET /api/orders/:id → payments (auth)',
      ].sort(),
    );
  });

  it('is checked when read: a malformed table names the problem', () => {
    const good = JSON.parse(readFileSync(DEFAULT_ROUTES_PATH, 'utf8')) as { routes: Record<string, unknown>[] };
    const broken = (change: (t: typeof good) => void) => {
      const copy = structuredClone(good);
      change(copy);
      return () => parseRouteTable(JSON.stringify(copy));
    };
    expect(broken((t) => (t.routes[0]!.service = 'billing'))).toThrow(/routes\.0\.service/);
    expect(broken((t) => (t.routes[0]!.method = 'TRACE'))).toThrow(/routes\.0\.method/);
    expect(broken((t) => (t.routes[0]!.path = 'no-slash'))).toThrow(/routes\.0\.path/);
    expect(broken((t) => (t.routes[0]!.deprecated = { 1: { sunset: '2027-09-01', link: '/x' } }))).toThrow(/must be an HTTP-date/);
    expect(() => parseRouteTable('{')).toThrow(SyntaxError);
  });
});
