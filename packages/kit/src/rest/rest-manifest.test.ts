import express, { Router } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { badRequest, forbidden } from '../errors/errors';
import { errorHandler, jsonBody, notFoundHandler } from '../http/http';
import {
  composeRouteTable,
  defineRestManifest,
  idParam,
  isGatewayPath,
  mountRestRoutes,
  pathId,
  ruleField,
  toHttpDate,
  validateRestInput,
  type RestRoute,
} from './rest-manifest';
import { restOpenApi } from './rest-openapi';
import { requiredText } from '../domain/text';
import { signAccessToken } from '../auth/jwt';
import { SCOPES } from '../auth/scopes';
import { TEST_JWT_SECRET } from '../testing';

const SUNSET = 'Wed, 01 Sep 2027 00:00:00 GMT';
const GUIDE = '/docs/migrations/v1-to-v2.md';

/** A small catalog-like manifest: a list with a query, a read by id, a protected write in two versions. */
const things = defineRestManifest({
  service: 'catalog',
  description: 'Things',
  routes: [
    {
      id: 'listThings',
      method: 'GET',
      path: '/things',
      summary: 'List things',
      query: z.object({ sort: z.enum(['id', 'name', ''], { error: 'Invalid sort' }).optional() }),
      responses: { 200: { description: 'A page', schema: z.object({ data: z.array(z.object({ id: z.number() })) }) } },
      versions: { 1: { deprecated: { sunset: '2027-09-01', link: GUIDE } }, 2: {} },
    },
    {
      id: 'getThing',
      method: 'GET',
      path: '/things/:id',
      summary: 'One thing',
      params: z.object({ id: idParam() }),
      responses: { 200: { description: 'The thing' }, 404: { description: '`Not found`' } },
    },
    {
      id: 'createThing',
      method: 'POST',
      path: '/things',
      summary: 'Create a thing',
      auth: 'required',
      body: z.object({
        name: ruleField((v) => requiredText(v, 'name', 5), { type: 'string', minLength: 1, maxLength: 5 }),
        size: z.number({ error: 'size must be a number' }).optional(),
      }),
      responses: { 201: { description: 'Created', location: 'The thing' } },
      versions: {
        1: { deprecated: { sunset: SUNSET, link: GUIDE } },
        2: { body: z.object({ label: z.string({ error: 'label is required' }) }) },
      },
    },
    {
      id: 'thingCallback',
      method: 'GET',
      path: '/things/:id/callback',
      summary: 'Answered by another router',
      mountedElsewhere: 'src/things/router.ts',
      responses: { 302: { description: 'Redirect', location: 'Where to' } },
    },
  ],
});

const route = (id: string) => things.routes.find((r) => r.id === id)! as RestRoute;

describe('defineRestManifest', () => {
  const base = { id: 'x', method: 'GET', path: '/x', summary: 'x', responses: { 200: { description: 'ok' } } } as const;
  const define =
    (r: Partial<RestRoute>, more: RestRoute[] = []) =>
    () =>
      defineRestManifest({ service: 'content', description: 'd', routes: [{ ...base, ...r }, ...more] });

  it('accepts a sound manifest and keeps it as it is', () => {
    expect(define({})()).toMatchObject({ service: 'content', routes: [{ id: 'x' }] });
  });

  it.each([
    ['an id that is not camelCase', { id: 'Bad-id' }, /camelCase/],
    ['a trailing slash', { path: '/x/' }, /trailing slash/],
    ['a relative path', { path: 'x' }, /path must be/],
    ['/graphql', { path: '/graphql' }, /gateway owns/],
    ['a path under /docs/', { path: '/docs/things' }, /gateway owns/],
    ['a version selector path', { path: '/api/v2/x' }, /gateway owns/],
    ['a repeated path parameter', { path: '/x/:id/:id' }, /appears twice/],
    [
      'params that are not the path parameters',
      { path: '/x/:id', params: z.object({ other: z.string() }) },
      /exactly the path parameters \(id\)/,
    ],
    ['version 0', { versions: { 0: {} } }, /not a positive integer/],
    ['no version at all', { versions: {} }, /no version/],
    ['a sunset that is no date', { versions: { 1: { deprecated: { sunset: 'next year', link: GUIDE } } } }, /sunset must be/],
    ['a sunset that is no calendar day', { versions: { 1: { deprecated: { sunset: '2027-02-30', link: GUIDE } } } }, /sunset must be/],
    ['a relative link', { versions: { 1: { deprecated: { sunset: SUNSET, link: 'docs/v2.md' } } } }, /link must be/],
  ] as [string, Partial<RestRoute>, RegExp][])('refuses %s', (_label, r, message) => {
    expect(define(r)).toThrow(message);
  });

  it('refuses a duplicate id and a method + path declared twice for one version', () => {
    expect(define({}, [{ ...base, path: '/y' }])).toThrow(/duplicate id/);
    expect(define({}, [{ ...base, id: 'y' }])).toThrow(/declared twice for version 1/);
    // The same path and method in different versions is fine.
    expect(define({}, [{ ...base, id: 'y', versions: { 2: {} } }])).not.toThrow();
  });

  it('knows the gateway’s own paths, and only those', () => {
    for (const p of ['/', '/graphql', '/openapi.json', '/docs', '/docs/migrations/x.md', '/healthz', '/api/v1/products', '/graphiql/x']) {
      expect({ p, reserved: isGatewayPath(p) }).toEqual({ p, reserved: true });
    }
    for (const p of ['/api/videos', '/api/payments', '/documents', '/graphql-schema', '/products']) {
      expect({ p, reserved: isGatewayPath(p) }).toEqual({ p, reserved: false });
    }
  });

  it('turns ISO dates into HTTP-dates and refuses anything else', () => {
    expect(toHttpDate(SUNSET)).toBe(SUNSET);
    expect(toHttpDate('2027-09-01')).toBe(SUNSET);
    expect(toHttpDate('2027-09-01T00:00:00Z')).toBe(SUNSET);
    for (const bad of ['', '1', 'Mon, 01 Sep 2027 00:00:00 GMT', '2027-13-01', '2027-09-01T00:00:00+07:00'])
      expect(toHttpDate(bad)).toBeNull();
  });
});

describe('validateRestInput', () => {
  const create = route('createThing');
  const message = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return (err as Error).message;
    }
    return null;
  };

  it('answers the first problem, in declaration order, with the rule’s own message', () => {
    expect(message(() => validateRestInput(create, 1, { body: {} }))).toBe('name is required');
    expect(message(() => validateRestInput(create, 1, { body: { name: '   ' } }))).toBe('name is required');
    expect(message(() => validateRestInput(create, 1, { body: { name: 'toolong', size: 'x' } }))).toBe('name must be at most 5 characters');
    expect(message(() => validateRestInput(create, 1, { body: { name: 'ok', size: 'x' } }))).toBe('size must be a number');
    expect(validateRestInput(create, 1, { body: { name: 'ok', size: 3, extra: true } })).toEqual({
      version: 1,
      params: {},
      query: {},
      body: { name: 'ok', size: 3 },
    });
  });

  it('takes an absent or non-object body as {} for an object schema', () => {
    for (const body of [undefined, null, 'Budi', 42, ['name']]) {
      expect(message(() => validateRestInput(create, 1, { body }))).toBe('name is required');
    }
  });

  it('uses the version’s own schema', () => {
    expect(message(() => validateRestInput(create, 2, { body: { name: 'ok' } }))).toBe('label is required');
    expect(validateRestInput(create, 2, { body: { label: 'x' } }).body).toEqual({ label: 'x' });
  });

  it('checks params and query: `Invalid id`, a whitelist', () => {
    const get = route('getThing');
    for (const id of ['abc', '-1', '1.5', '1e3', '', '1234567890123456']) {
      expect(message(() => validateRestInput(get, 1, { params: { id } }))).toBe('Invalid id');
    }
    expect(validateRestInput(get, 1, { params: { id: '0' } }).params).toEqual({ id: '0' });
    const positive = z.object({ id: idParam({ min: 1 }) });
    expect(positive.safeParse({ id: '0' }).success).toBe(false);
    const list = route('listThings');
    expect(message(() => validateRestInput(list, 1, { query: { sort: 'price' } }))).toBe('Invalid sort');
    expect(message(() => validateRestInput(list, 1, { query: { sort: ['id', 'name'] } }))).toBe('Invalid sort');
    expect(validateRestInput(list, 2, { query: { sort: '' } }).query).toEqual({ sort: '' });
  });

  it('names the field even where a schema has no message of its own (never zod’s wording)', () => {
    const bare: RestRoute = {
      id: 'bare',
      method: 'POST',
      path: '/bare',
      summary: 'bare',
      body: z.object({ title: z.string(), tags: z.array(z.string()).optional() }),
      responses: { 200: { description: 'ok' } },
    };
    expect(message(() => validateRestInput(bare, 1, { body: {} }))).toBe('title is required');
    expect(message(() => validateRestInput(bare, 1, { body: { title: 1 } }))).toBe('title is invalid');
    expect(message(() => validateRestInput(bare, 1, { body: { title: 't', tags: [1] } }))).toBe('tags.0 is invalid');
  });

  it('passes a rule’s unexpected error through instead of turning it into a 400', () => {
    const boom = z.object({
      x: ruleField(() => {
        throw new Error('bug');
      }, {}),
    });
    expect(() => boom.safeParse({ x: 1 })).toThrow('bug');
  });
});

describe('mountRestRoutes', () => {
  const calls: string[] = [];
  function app(handlers: Parameters<typeof mountRestRoutes<'listThings' | 'getThing' | 'createThing' | 'thingCallback'>>[2]) {
    const a = express();
    a.use(jsonBody(1024));
    a.use(mountRestRoutes(Router(), things, handlers, { jwtSecret: TEST_JWT_SECRET }));
    a.use(notFoundHandler);
    a.use(errorHandler());
    return a;
  }
  const handlers = {
    listThings: (_req: express.Request, res: express.Response, input: { version: number; query: unknown }) => {
      res.json({ version: input.version, query: input.query });
    },
    getThing: (_req: express.Request, res: express.Response, input: { params: Record<string, string> }) => {
      res.json({ id: Number(input.params.id) });
    },
    createThing: {
      authorize: (req: express.Request) => {
        calls.push('authorize');
        if (req.headers.authorization !== 'Bearer admin') throw forbidden();
      },
      handle: (_req: express.Request, res: express.Response, input: { version: number; body: unknown }) => {
        calls.push('handle');
        res.status(201).json({ version: input.version, body: input.body });
      },
    },
  };

  it('mounts each version at its upstream path, with validated input', async () => {
    const a = app(handlers);
    expect((await request(a).get('/things?sort=name')).body).toEqual({ version: 1, query: { sort: 'name' } });
    expect((await request(a).get('/v2/things')).body).toEqual({ version: 2, query: {} });
    expect((await request(a).get('/things/7')).body).toEqual({ id: 7 });
    const v2 = await request(a).post('/v2/things').set('authorization', 'Bearer admin').send({ label: 'x', more: 1 });
    expect(v2.status).toBe(201);
    expect(v2.body).toEqual({ version: 2, body: { label: 'x' } });
  });

  it('answers a schema break with the contract’s 400 naming the field; the handler never runs', async () => {
    const a = app(handlers);
    calls.length = 0;
    const res = await request(a).post('/things').set('authorization', 'Bearer admin').send({ name: 'far too long' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'name must be at most 5 characters' });
    expect(calls).toEqual(['authorize']);
    expect((await request(a).get('/things/abc')).body).toEqual({ error: 'Invalid id' });
    expect((await request(a).get('/things?sort=price')).body).toEqual({ error: 'Invalid sort' });
  });

  it('asks who before what: a caller who may not gets 403, even with a bad body', async () => {
    calls.length = 0;
    const res = await request(app(handlers)).post('/things').send({});
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'Forbidden' });
    expect(calls).toEqual(['authorize']);
  });

  it('keeps 405 with Allow, and does not mount routes answered elsewhere', async () => {
    const a = app(handlers);
    const wrong = await request(a).delete('/things');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('GET, POST, HEAD');
    expect((await request(a).get('/things/1/callback')).status).toBe(404);
  });

  it('refuses a route without a handler and a handler without a route', () => {
    const { getThing: _missing, ...partial } = handlers;
    expect(() => app(partial)).toThrow('catalog: no handler for REST route getThing (GET /things/:id)');
    expect(() => app({ ...handlers, stray: () => undefined } as never)).toThrow('handler stray has no route');
    expect(() => app({ ...handlers, thingCallback: () => undefined })).toThrow(
      'thingCallback is mounted by src/things/router.ts, not here',
    );
  });

  it('lets a handler’s own HaloError through to the error mapper', async () => {
    const a = app({
      ...handlers,
      getThing: () => {
        throw badRequest('Other');
      },
    });
    expect((await request(a).get('/things/1')).body).toEqual({ error: 'Other' });
  });
});

describe('composeRouteTable', () => {
  it('merges versions per method and path, with deprecations as HTTP-dates', () => {
    const table = composeRouteTable([things], 'composed');
    expect(table).toEqual({
      $comment: 'composed',
      defaultVersion: 1,
      versions: { 1: { upstreamPrefix: '' }, 2: { upstreamPrefix: '/v2' } },
      routes: [
        { service: 'catalog', method: 'GET', path: '/things', versions: [1, 2], deprecated: { 1: { sunset: SUNSET, link: GUIDE } } },
        {
          service: 'catalog',
          method: 'POST',
          path: '/things',
          auth: true,
          versions: [1, 2],
          deprecated: { 1: { sunset: SUNSET, link: GUIDE } },
        },
        { service: 'catalog', method: 'GET', path: '/things/:id' },
        { service: 'catalog', method: 'GET', path: '/things/:id/callback' },
      ],
    });
  });

  it('merges one path declared per version by the same service', () => {
    const split = defineRestManifest({
      service: 'content',
      description: 'd',
      routes: [
        { id: 'a', method: 'GET', path: '/a', summary: 'a', responses: { 200: { description: 'ok' } } },
        { id: 'aV3', method: 'GET', path: '/a', summary: 'a', responses: { 200: { description: 'ok' } }, versions: { 3: {} } },
      ],
    });
    expect(composeRouteTable([split]).routes).toEqual([{ service: 'content', method: 'GET', path: '/a', versions: [1, 3] }]);
    expect(composeRouteTable([split]).versions).toEqual({ 1: { upstreamPrefix: '' }, 3: { upstreamPrefix: '/v3' } });
  });

  it('refuses one method and path owned by two services', () => {
    const other = defineRestManifest({
      service: 'content',
      description: 'd',
      routes: [{ id: 'mine', method: 'GET', path: '/things', summary: 's', responses: { 200: { description: 'ok' } } }],
    });
    expect(() => composeRouteTable([things, other])).toThrow('GET /things is declared by catalog and by content');
  });
});

describe('restOpenApi', () => {
  const doc = restOpenApi([things], { title: 'T', version: '1' }) as {
    openapi: string;
    paths: Record<string, Record<string, Record<string, unknown>>>;
  };

  it('lists version 1 at the path and version N at /api/vN, with OpenAPI path templates', () => {
    expect(doc.openapi).toBe('3.1.0');
    // /things has two versions: its v1 is also listed at /api/v1 (operation createThingV1).
    expect(Object.keys(doc.paths)).toEqual(['/api/v1/things', '/api/v2/things', '/things', '/things/{id}', '/things/{id}/callback']);
    expect(Object.keys(doc.paths['/things']!)).toEqual(['get', 'post']);
    expect(doc.paths['/api/v2/things']!.post!.operationId).toBe('createThingV2');
  });

  it('marks a deprecated version and documents its headers', () => {
    const list = doc.paths['/things']!.get!;
    expect(list.deprecated).toBe(true);
    expect(list.description).toContain(SUNSET);
    expect(JSON.stringify(list.responses)).toContain(`<${GUIDE}>; rel=\\"successor-version\\"`);
    expect(doc.paths['/api/v2/things']!.get!.deprecated).toBeUndefined();
  });

  it('turns the zod schemas into JSON Schema 2020-12 parameters and bodies', () => {
    const get = doc.paths['/things/{id}']!.get!;
    expect(get.parameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 0, maximum: 999_999_999_999_999 } },
    ]);
    expect(get.responses).toMatchObject({ 400: { description: expect.any(String) }, 404: { description: '`Not found`' } });
    const list = doc.paths['/things']!.get!;
    expect(list.parameters).toEqual([
      { name: 'sort', in: 'query', required: false, schema: { type: 'string', enum: ['id', 'name', ''] } },
      // /things exists in two versions: the unversioned path takes the version selector.
      expect.objectContaining({ name: 'version', in: 'query', schema: { type: 'integer', enum: [1, 2], default: 1 } }),
    ]);
    const create = doc.paths['/things']!.post!;
    expect(create.security).toEqual([{ bearerAuth: [] }, { apiKey: [] }]);
    expect(create.requestBody).toEqual({
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { name: { type: 'string', minLength: 1, maxLength: 5 }, size: { type: 'number' } },
            required: ['name'],
          },
        },
      },
    });
    expect(create.responses).toMatchObject({ 201: {}, 400: {}, 401: {} });
    expect(JSON.stringify(doc)).not.toContain('$schema');
  });
});

describe('restOpenApi: the headers and security a route declares (issue 29)', () => {
  const m = defineRestManifest({
    service: 'payments',
    description: 'd',
    routes: [
      { id: 'open', method: 'GET', path: '/open', summary: 's', responses: { 200: { description: 'ok' } } },
      {
        id: 'pay',
        method: 'POST',
        path: '/pay',
        summary: 's',
        auth: 'required',
        scope: 'payments:write',
        idempotent: true,
        setsCookie: 'Sets c',
        responses: { 201: { description: 'made', location: 'The payment' }, 409: { description: 'busy', retryAfter: true } },
      },
      {
        id: 'items',
        method: 'GET',
        path: '/items',
        summary: 's',
        responses: { 200: { description: 'v1', schema: z.object({ price: z.number() }) } },
        versions: { 1: {}, 2: { responses: { 200: { description: 'v2', schema: z.object({ cents: z.number().int() }) } } } },
      },
    ],
  });
  const doc = restOpenApi([m], { title: 'T', version: '1' }) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components: Record<string, Record<string, unknown>>;
  };
  const op = (path: string, method: string) => doc.paths[path]![method] as Record<string, any>;

  it('a public operation says so: security [] and a description of its access', () => {
    expect(op('/open', 'get').security).toEqual([]);
    expect(op('/open', 'get').description).toContain('Public');
    expect(op('/pay', 'post').security).toEqual([{ bearerAuth: [] }, { apiKey: [] }]);
    expect(op('/pay', 'post')['x-halo-api-key-scope']).toBe('payments:write');
  });

  it('idempotent: the Idempotency-Key parameter and Idempotent-Replayed on success; Location, Set-Cookie, Retry-After', () => {
    const pay = op('/pay', 'post');
    expect(pay.parameters).toEqual([{ $ref: '#/components/parameters/IdempotencyKey' }]);
    expect(Object.keys(pay.responses['201'].headers)).toEqual(
      expect.arrayContaining(['Location', 'Idempotent-Replayed', 'Set-Cookie', 'RateLimit', 'RateLimit-Policy']),
    );
    expect(pay.responses['409'].headers['Retry-After']).toEqual({ $ref: '#/components/headers/Retry-After-Optional' });
    expect(pay.responses['409'].headers['Set-Cookie']).toBeUndefined();
    expect(doc.components.parameters).toHaveProperty('IdempotencyKey');
  });

  it("every operation has the gateway's 429 with Retry-After and the RateLimit fields", () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops))
        expect(op(path, method).responses['429']).toEqual({ $ref: '#/components/responses/TooManyRequests' });
    }
    expect(doc.components.responses!.TooManyRequests).toMatchObject({ headers: { 'Retry-After': {}, RateLimit: {} } });
  });

  it('every answer declares X-Request-Id, one shared component', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) {
        for (const [status, r] of Object.entries(op(path, method).responses as Record<string, any>)) {
          const headers = r.$ref ? (doc.components.responses![r.$ref.split('/').pop()] as any).headers : r.headers;
          expect([path, method, status, headers?.['X-Request-Id']]).toEqual([
            path,
            method,
            status,
            { $ref: '#/components/headers/X-Request-Id' },
          ]);
        }
      }
    }
    expect(doc.components.headers!['X-Request-Id']).toMatchObject({ required: true, schema: { type: 'string' } });
  });

  it('a route with several versions lists each at /api/vN, v1 included; a route with one is listed once', () => {
    const v1 = op('/api/v1/items', 'get');
    expect(v1.operationId).toBe('itemsV1');
    expect(v1.responses['200'].content).toEqual({ 'application/json': expect.anything() });
    expect(v1.responses['200'].content['application/json'].schema.properties).toHaveProperty('price');
    // The path names the version: no selector there.
    expect(v1.parameters ?? []).not.toContainEqual(expect.objectContaining({ name: 'version' }));
    expect(op('/api/v2/items', 'get').operationId).toBe('itemsV2');
    expect(op('/items', 'get').operationId).toBe('items');
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/api/v1/'))).toEqual(['/api/v1/items']);
  });

  it('the unversioned path declares version 2 as a second media type, and ?version', () => {
    const items = op('/items', 'get');
    expect(items.responses['200'].content['application/vnd.halo.v2+json'].schema.properties).toHaveProperty('cents');
    expect(items.responses['200'].content['application/json'].schema.properties).toHaveProperty('price');
    expect(items.parameters).toContainEqual(
      expect.objectContaining({ name: 'version', in: 'query', schema: expect.objectContaining({ enum: [1, 2] }) }),
    );
    expect(op('/api/v2/items', 'get').responses['200'].content).not.toHaveProperty('application/vnd.halo.v2+json');
  });

  it('refuses a redirect without a location', () => {
    expect(() =>
      defineRestManifest({
        service: 'auth',
        description: 'd',
        routes: [{ id: 'go', method: 'GET', path: '/go', summary: 's', responses: { 302: { description: 'away' } } }],
      }),
    ).toThrow('redirect 302 needs a location');
  });

  it('refuses a 201 without a location, in any version', () => {
    const created = (v2: Record<number, { description: string; location?: string }>) => () =>
      defineRestManifest({
        service: 'catalog',
        description: 'd',
        routes: [
          {
            id: 'make',
            method: 'POST',
            path: '/made',
            summary: 's',
            responses: { 201: { description: 'made', location: 'The thing: `/made/<id>`' } },
            versions: { 1: {}, 2: { responses: v2 } },
          },
        ],
      });
    expect(created({ 201: { description: 'made' } })).toThrow('catalog: REST route make (POST /made): 201 needs a location');
    expect(created({ 201: { description: 'made', location: 'The thing: `/api/v2/made/<id>`' } })).not.toThrow();
  });
});

describe('API keys and the declared scope (kit/src/auth/scopes.ts)', () => {
  const scoped = defineRestManifest({
    service: 'catalog',
    description: 'Scoped things',
    routes: [
      { id: 'openThing', method: 'GET', path: '/open', summary: 'Public', responses: { 200: { description: 'ok' } } },
      {
        id: 'writeThing',
        method: 'POST',
        path: '/write',
        summary: 'Scoped',
        auth: 'required',
        scope: 'catalog:write',
        responses: { 200: { description: 'ok' } },
      },
      {
        id: 'adminThing',
        method: 'POST',
        path: '/admin',
        summary: 'No scope',
        auth: 'required',
        responses: { 200: { description: 'ok' } },
      },
    ],
  });
  const ok = (_req: express.Request, res: express.Response) => void res.json({ ok: true });
  const a = express();
  a.use(jsonBody(1024));
  a.use(mountRestRoutes(Router(), scoped, { openThing: ok, writeThing: ok, adminThing: ok }, { jwtSecret: TEST_JWT_SECRET }));
  a.use(errorHandler());
  const token = (scope?: string) =>
    `Bearer ${signAccessToken({ sub: '1', name: 'A', role: 'admin', ...(scope !== undefined ? { scope, akid: '9' } : {}) }, TEST_JWT_SECRET, 60)}`;

  it('refuses a key without the route’s scope with 403 before the handler; a key with it and a user token pass', async () => {
    const refused = await request(a).post('/write').set('authorization', token('users:write catalog:read'));
    expect([refused.status, refused.body]).toEqual([403, { error: 'Forbidden' }]);
    expect((await request(a).post('/write').set('authorization', token('catalog:write'))).status).toBe(200);
    expect((await request(a).post('/write').set('authorization', token())).status).toBe(200);
  });

  it('refuses every key on an authenticated route that declares no scope; public routes stay public', async () => {
    expect(
      (
        await request(a)
          .post('/admin')
          .set('authorization', token(SCOPES.join(' ')))
      ).status,
    ).toBe(403);
    expect((await request(a).post('/admin').set('authorization', token())).status).toBe(200);
    expect((await request(a).get('/open').set('authorization', token(''))).status).toBe(200);
  });

  it('refuses a scope on a public route, or an unknown one, where the manifest is declared', () => {
    const route = { id: 'x', method: 'GET', path: '/x', summary: 'x', responses: {} } as const;
    expect(() => defineRestManifest({ service: 'catalog', description: '', routes: [{ ...route, scope: 'catalog:write' }] })).toThrow(
      /a scope needs auth/,
    );
    expect(() =>
      defineRestManifest({
        service: 'catalog',
        description: '',
        routes: [{ ...route, auth: 'required', scope: 'catalog:wrte' as 'catalog:write' }],
      }),
    ).toThrow(/one of SCOPES/);
  });
});

describe('the caller, verified once per request', () => {
  const m = defineRestManifest({
    service: 'catalog',
    description: 'Callers',
    routes: [
      {
        id: 'mine',
        method: 'GET',
        path: '/mine/:id',
        summary: 'Mine',
        auth: 'required',
        params: z.object({ id: pathId() }),
        responses: { 200: { description: 'ok' } },
      },
      { id: 'open', method: 'GET', path: '/open', summary: 'Public', responses: { 200: { description: 'ok' } } },
    ],
  });
  const seen: unknown[] = [];
  const a = express();
  a.use(
    mountRestRoutes(
      Router(),
      m,
      {
        mine: {
          authorize: (_req, { caller }) => void seen.push(caller()),
          handle: (_req, res, { params, caller }) => {
            seen.push(caller());
            // Typed by the route: the path id arrives as a number.
            const id: number = params.id;
            res.json({ id, sub: caller()?.id ?? null });
          },
        },
        open: (_req, res) => void res.json({ ok: true }),
      },
      { jwtSecret: TEST_JWT_SECRET },
    ),
  );
  a.use(errorHandler());
  const token = `Bearer ${signAccessToken({ sub: '4', name: 'A', role: 'user' }, TEST_JWT_SECRET, 60)}`;

  it('hands authorize and handler one verified caller, and the id as a number', async () => {
    seen.length = 0;
    const res = await request(a).get('/mine/12').set('authorization', token);
    expect([res.status, res.body]).toEqual([200, { id: 12, sub: 4 }]);
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBe(seen[1]);
  });

  it('answers a bad token with 401 Invalid token where the caller is asked; a public route never asks', async () => {
    const bad = await request(a).get('/mine/12').set('authorization', 'Bearer nope');
    expect([bad.status, bad.body]).toEqual([401, { error: 'Invalid token' }]);
    expect((await request(a).get('/open').set('authorization', 'Bearer nope')).status).toBe(200);
  });
});
