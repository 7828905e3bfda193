import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { bearer, startE2ESystem } from '../helpers';

/**
 * A fuzz pass over every public REST route of the composed route table, through the gateway of
 * the real system: random path parameters, query strings, bodies (JSON of any shape, broken JSON,
 * other content types), credentials (none, a user's, an admin's, garbage) and version selectors.
 * Whatever arrives, the answer is never a 5xx, never a stack trace, and every error is the
 * contract's `{"error": "<message>"}` (docs/api/conventions.md).
 */
type Route = { method: string; path: string; auth?: boolean };
const ROUTES = (JSON.parse(readFileSync(resolve(__dirname, '../../gateway/routes.json'), 'utf8')) as { routes: Route[] }).routes;
const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 25);

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
beforeAll(async () => {
  sys = await startE2ESystem();
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

const segment = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 45 }).map(String) },
  fc.integer({ min: -5, max: 60 }).map(String),
  fc.constantFrom('0', '1', '2', '9999999999999999999999', '1e3', '0x10', '-0', ' 1', '1.5', 'NaN', 'null', '%00', '..', 'dev', 'google'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);
const queryValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.integer().map(String),
  fc.constantFrom('', 'price', 'desc', 'asc', 'name', '2', '3'),
);
const query = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Record<string, string>>({}) },
  {
    weight: 3,
    arbitrary: fc.dictionary(
      fc.constantFrom('page', 'limit', 'category', 'sort', 'order', 'version', 'code', 'state', 'first', 'after', 'x'),
      queryValue,
      { maxKeys: 4 },
    ),
  },
);
const body = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => ({ type: 'application/json', text: JSON.stringify(v) })) },
  {
    weight: 3,
    arbitrary: fc
      .record(
        {
          name: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
          email: fc.oneof(fc.emailAddress(), fc.string()),
          password: fc.string(),
          amount: fc.oneof(fc.double(), fc.integer(), fc.string()),
          product_id: fc.oneof(fc.integer(), fc.string()),
          client_order_id: fc.string({ maxLength: 120 }),
          price: fc.oneof(fc.double(), fc.string()),
          scopes: fc.array(fc.string(), { maxLength: 3 }),
        },
        { requiredKeys: [] },
      )
      .map((v) => ({ type: 'application/json', text: JSON.stringify(v) })),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }).map((text) => ({ type: 'application/json', text })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }).map((text) => ({ type: 'text/plain', text })) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
const credentials = fc.constantFrom<Record<string, string>>(
  {},
  bearer('2', 'Alice', 'user'),
  bearer('2', 'Alice', 'user'),
  bearer('1', 'Admin', 'admin'),
  bearer('1', 'Admin', 'admin'),
  { authorization: 'Bearer not.a.token' },
  { authorization: 'Basic YTpi' },
  { 'x-api-key': 'halo_nope' },
);
// Mostly no selector, so most requests reach the services' own validation and logic.
const versioning = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Record<string, string>>({}) },
  { weight: 1, arbitrary: fc.constant<Record<string, string>>({ accept: 'application/vnd.halo.v2+json' }) },
  { weight: 1, arbitrary: fc.constant<Record<string, string>>({ accept: 'application/vnd.halo.v9+json' }) },
);

const STACK = /\n\s+at .+:\d+:\d+|node_modules|\.ts:\d+/;

describe.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_name, route) => {
  it('answers anything with the contract: no 5xx, no stack trace, errors as {"error": "…"}', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { minLength: 2, maxLength: 2 }),
        query,
        body,
        credentials,
        versioning,
        fc.uuid(),
        async (params, q, b, creds, version, key) => {
          let i = 0;
          const path = route.path.replace(/:[A-Za-z]+/g, () => encodeURIComponent(params[i++ % params.length]!));
          const search = new URLSearchParams(q).toString();
          const headers: Record<string, string> = { ...creds, ...version, 'idempotency-key': key };
          const hasBody = route.method !== 'GET' && route.method !== 'DELETE' && b !== undefined;
          if (hasBody) headers['content-type'] = b.type;
          const res = await fetch(`${sys.url}${path}${search ? `?${search}` : ''}`, {
            method: route.method,
            headers,
            ...(hasBody ? { body: b.text } : {}),
            redirect: 'manual',
            signal: AbortSignal.timeout(10_000),
          });
          const text = await res.text();
          const seen = `${route.method} ${path}?${search} → ${res.status} ${text.slice(0, 200)}`;
          expect({ seen, serverError: res.status >= 500 }).toEqual({ seen, serverError: false });
          expect(STACK.test(text) ? seen : 'no stack').toBe('no stack');
          if (res.status >= 400 && (res.headers.get('content-type') ?? '').includes('json')) {
            const parsed = JSON.parse(text) as { error?: unknown };
            expect({ seen, error: typeof parsed.error }).toEqual({ seen, error: 'string' });
          }
        },
      ),
      { numRuns: RUNS_PER_ROUTE },
    );
  });
});

describe('hostile bodies through the gateway, on a route that reads JSON (POST /greet) and on GraphQL', () => {
  const send = (path: string, body: Buffer | string, type = 'application/json') =>
    fetch(`${sys.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(10_000) });

  it('10,000-deep JSON → a contract error, and the system keeps answering', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const path of ['/greet', '/graphql']) {
      const res = await send(path, deep);
      expect(res.status).toBeLessThan(500);
      expect(res.status).toBeGreaterThanOrEqual(400);
    }
    expect((await fetch(`${sys.url}/hello`)).status).toBe(200);
  });

  it('invalid UTF-8 → 400 Invalid JSON (never stored as U+FFFD), through the gateway and straight to the service', async () => {
    const bad = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff, 0xfe]), Buffer.from('"}')]);
    for (const base of [sys.url, sys.direct('content')]) {
      const res = await fetch(`${base}/greet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bad });
      expect([base, res.status, await res.json()]).toEqual([base, 400, { error: 'Invalid JSON' }]);
    }
    expect((await fetch(`${sys.url}/hello`)).status).toBe(200);
  });

  it('a body over the limit → 413 Payload too large, on REST and GraphQL', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) });
    for (const path of ['/greet', '/graphql']) {
      const res = await send(path, big);
      expect([path, res.status]).toEqual([path, 413]);
      expect(await res.json()).toEqual(expect.objectContaining({ error: 'Payload too large' }));
    }
  });
});
