import { createRouteTable, ROUTES, type RouteDef } from '../src/routes';

describe('route table', () => {
  const table = createRouteTable();

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
