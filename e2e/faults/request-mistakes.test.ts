import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { bearer, startE2ESystem } from '../helpers';

/**
 * Client mistakes that used to reach a 500 or a guess, through the gateway of the real system:
 * GraphQL requests that cannot be executed as sent (docs/api/graphql.md, "Request errors"), and
 * single-valued headers sent twice (docs/api/conventions.md).
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
beforeAll(async () => {
  sys = await startE2ESystem();
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

type GraphQLBody = { errors?: { message: string; extensions?: Record<string, unknown> }[]; data?: unknown };

const post = async (body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${sys.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    json: (() => {
      try {
        return JSON.parse(text) as GraphQLBody | GraphQLBody[];
      } catch {
        return undefined;
      }
    })(),
  };
};
const get = async (params: Record<string, string>) => {
  const res = await fetch(`${sys.url}/graphql?${new URLSearchParams(params).toString()}`, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as GraphQLBody };
};
const codes = (body: GraphQLBody | GraphQLBody[] | undefined) =>
  (Array.isArray(body) ? body : [body]).flatMap((b) => b?.errors?.map((e) => e.extensions?.code) ?? []);

/** `levels` objects, one inside the other: `nested(2)` is `{"a":{"a":1}}`. */
const nested = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};

describe('GraphQL request errors are 400 with a code of their own', () => {
  it('an operationName naming no operation → 400 UNKNOWN_OPERATION_NAME (POST, GET, and in a batch)', async () => {
    const one = await post({ query: 'query A { __typename }', operationName: 'B' });
    expect([one.status, codes(one.json)]).toEqual([400, ['UNKNOWN_OPERATION_NAME']]);
    const viaGet = await get({ query: 'query A { __typename }', operationName: 'B' });
    expect([viaGet.status, codes(viaGet.json)]).toEqual([400, ['UNKNOWN_OPERATION_NAME']]);
    const batch = await post([{ query: '{ __typename }' }, { query: 'query A { __typename }', operationName: 'Z' }]);
    expect([batch.status, codes(batch.json)]).toEqual([400, ['UNKNOWN_OPERATION_NAME']]);
  });

  it('several operations and no operationName → 400 OPERATION_NAME_REQUIRED', async () => {
    const res = await post({ query: 'query A { __typename } query B { __typename }' });
    expect([res.status, codes(res.json)]).toEqual([400, ['OPERATION_NAME_REQUIRED']]);
    // Named, it runs.
    expect((await post({ query: 'query A { __typename } query B { __typename }', operationName: 'B' })).status).toBe(200);
  });

  it('variables nested deeper than 64 levels → 400 VARIABLES_DEPTH_LIMIT; 64 levels still run', async () => {
    const query = 'query($v: String) { __typename }';
    // The variables object is the first level.
    const atCap = await post({ query: '{ __typename }', variables: { v: nested(63) } });
    expect([atCap.status, atCap.json]).toEqual([200, { data: { __typename: 'Query' } }]);
    for (const levels of [64, 5_000]) {
      // As text: thousands of levels overflow JSON.stringify here too.
      const res = await post(`{"query":${JSON.stringify(query)},"variables":{"v":${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}}}`);
      expect([levels, res.status, (res.json as GraphQLBody).errors]).toEqual([
        levels,
        400,
        [{ message: 'variables are nested deeper than 64 levels', extensions: { code: 'VARIABLES_DEPTH_LIMIT', maxVariablesDepth: 64 } }],
      ]);
    }
    const viaGet = await get({ query: '{ __typename }', variables: JSON.stringify({ v: nested(100) }) });
    expect([viaGet.status, codes(viaGet.json)]).toEqual([400, ['VARIABLES_DEPTH_LIMIT']]);
  });

  it('a persisted-query hash that is not the query’s SHA-256 → 400 PERSISTED_QUERY_HASH_MISMATCH; an unsupported version is not internal', async () => {
    const mismatch = await post({ query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: '0'.repeat(64) } } });
    expect([mismatch.status, codes(mismatch.json)]).toEqual([400, ['PERSISTED_QUERY_HASH_MISMATCH']]);
    const sha256Hash = createHash('sha256').update('{ __typename }').digest('hex');
    expect((await post({ query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash } } })).status).toBe(200);
    const version = await post({ extensions: { persistedQuery: { version: 2, sha256Hash } } });
    expect([version.status, codes(version.json)]).toEqual([400, ['BAD_REQUEST']]);
  });

  describe('a fuzz of /graphql: no 5xx, never INTERNAL_SERVER_ERROR', () => {
    const documents = fc.constantFrom(
      '{ __typename }',
      'query A { __typename } query B { __typename }',
      'query Q($id: ID!) { product(id: $id) { id name } }',
      'query($c: String, $l: Int) { products(category: $c, limit: $l) { data { id } } }',
      'mutation { __typename }',
      'subscription { newMessage(chatId: "x") { id } }',
      '{ user(id: "2") { name posts(first: 1) { edges { node { title } } } } }',
      'fragment F on Query { __typename }',
      '{',
      '',
    );
    const json = fc.jsonValue({ maxDepth: 3 });
    const deep = fc.integer({ min: 1, max: 300 }).map(nested);
    const operation = fc.record(
      {
        query: fc.oneof(documents, fc.string({ maxLength: 40 }), json),
        operationName: fc.oneof(fc.constantFrom('A', 'B', 'Q', 'Z', ''), fc.string({ maxLength: 10 }), json),
        variables: fc.oneof(fc.dictionary(fc.constantFrom('id', 'c', 'l', 'v'), fc.oneof(json, deep)), json, deep),
        extensions: fc.oneof(
          fc.record(
            {
              persistedQuery: fc.record(
                {
                  version: fc.oneof(fc.constantFrom(1, 2), json),
                  sha256Hash: fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), fc.string(), json),
                },
                { requiredKeys: [] },
              ),
            },
            { requiredKeys: [] },
          ),
          json,
          deep,
        ),
      },
      { requiredKeys: [] },
    );
    const check = (seen: string, status: number, text: string) => {
      expect({ seen, serverError: status >= 500 }).toEqual({ seen, serverError: false });
      expect(text.includes('INTERNAL_SERVER_ERROR') ? seen : 'not internal').toBe('not internal');
    };
    const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

    it('POST bodies (single and batched, JSON of any shape)', async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(operation, fc.array(operation, { minLength: 1, maxLength: 3 }), json), async (body) => {
          const res = await post(body);
          check(`POST ${JSON.stringify(body).slice(0, 300)} → ${res.status} ${res.text.slice(0, 200)}`, res.status, res.text);
        }),
        // Found by this fuzz before the fix (a 400 coded INTERNAL_SERVER_ERROR): kept as examples.
        { numRuns: RUNS, examples: [[[{ query: '{ __typename }', operationName: '' }, { extensions: { a: 1 } }]]] },
      );
    });

    it('GET parameters (JSON-encoded or not)', async () => {
      await fc.assert(
        fc.asyncProperty(operation, fc.boolean(), async (op, encode) => {
          const params: Record<string, string> = {};
          for (const [k, v] of Object.entries(op)) params[k] = typeof v === 'string' && !encode ? v : JSON.stringify(v);
          const search = new URLSearchParams(params).toString();
          const res = await fetch(`${sys.url}/graphql?${search}`, { signal: AbortSignal.timeout(10_000) });
          const text = await res.text();
          check(`GET ?${search.slice(0, 300)} → ${res.status} ${text.slice(0, 200)}`, res.status, text);
        }),
        { numRuns: RUNS, examples: [[{ extensions: { persistedQuery: {} } }, false]] },
      );
    });
  });
});

describe('REST bodies nested past 64 levels', () => {
  it('a payment with a member nested 2,350 levels deep → 400 with the contract’s shape, through the gateway and at payments itself', async () => {
    const alice = bearer('2', 'Alice', 'user');
    const deep = `{"amount":1,"x":${'['.repeat(2350)}${']'.repeat(2350)}}`;
    for (const base of [sys.url, sys.direct('payments')]) {
      const key = `deep-${randomUUID()}`;
      const res = await fetch(`${base}/api/payments`, {
        method: 'POST',
        headers: { ...alice, 'content-type': 'application/json', 'idempotency-key': key },
        body: deep,
      });
      expect([base, res.status, await res.json()]).toEqual([base, 400, { error: 'JSON nested deeper than 64 levels' }]);
    }
  });
});

/** A request with headers sent as given, repeated ones included (fetch would join them into one). */
function raw(url: string, method: string, headers: [string, string | string[]][], body?: unknown) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: any }>((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    for (const [name, value] of headers) req.setHeader(name, value);
    if (body !== undefined) req.setHeader('content-type', 'application/json');
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('Authorization, X-API-Key and Idempotency-Key are sent once', () => {
  const alice = bearer('2', 'Alice', 'user').authorization!;
  const pay = (key: string | string[], base = sys.url) =>
    raw(
      `${base}/api/payments`,
      'POST',
      [
        ['authorization', alice],
        ['idempotency-key', key],
      ],
      { amount: 7.25 },
    );

  it('two Idempotency-Key headers → 400, and nothing is charged under either key', async () => {
    const a = `dup-a-${randomUUID()}`;
    const b = `dup-b-${randomUUID()}`;
    const twice = await pay([a, b]);
    expect([twice.status, twice.json]).toEqual([400, { error: 'Idempotency-Key must be sent once' }]);
    // Each key is still new: a first charge, not a replay.
    for (const key of [a, b]) {
      const first = await pay(key);
      expect([key, first.status, first.headers['idempotent-replayed']]).toEqual([key, 201, undefined]);
    }
  });

  it('two keys folded into one line (`k1, k2`, as an intermediary or fetch’s Headers.append sends them) → the same 400', async () => {
    const [a, b] = [`fold-a-${randomUUID()}`, `fold-b-${randomUUID()}`];
    for (const base of [sys.url, sys.direct('payments')]) {
      for (const folded of [`${a}, ${b}`, `${a},${b}`]) {
        const res = await pay(folded, base);
        expect([folded, res.status, res.json]).toEqual([folded, 400, { error: 'Idempotency-Key must be sent once' }]);
      }
    }
    const appended = new Headers({ authorization: alice, 'content-type': 'application/json' });
    appended.append('idempotency-key', a);
    appended.append('idempotency-key', b);
    const res = await fetch(`${sys.url}/api/payments`, { method: 'POST', headers: appended, body: '{"amount":7.25}' });
    expect([res.status, await res.json()]).toEqual([400, { error: 'Idempotency-Key must be sent once' }]);
    // Neither key was taken.
    expect((await pay(a)).headers['idempotent-replayed']).toBeUndefined();
  });

  it('the service itself refuses them too (a caller that reaches payments without the gateway)', async () => {
    const twice = await pay([`d1-${randomUUID()}`, `d2-${randomUUID()}`], sys.direct('payments'));
    expect([twice.status, twice.json]).toEqual([400, { error: 'Idempotency-Key must be sent once' }]);
  });

  it('two Authorization or two X-API-Key headers → 400 on REST and on GraphQL, never one of them guessed', async () => {
    const admin = bearer('1', 'Admin', 'admin').authorization!;
    for (const [name, values, shown] of [
      ['authorization', [alice, admin], 'Authorization'],
      ['x-api-key', ['halo_one', 'halo_two'], 'X-API-Key'],
    ] as const) {
      const rest = await raw(`${sys.url}/profile`, 'GET', [[name, [...values]]]);
      expect([name, rest.status, rest.json, rest.headers['cache-control']]).toEqual([
        name,
        400,
        { error: `${shown} must be sent once` },
        'no-store',
      ]);
      const gql = await raw(`${sys.url}/graphql`, 'POST', [[name, [...values]]], { query: '{ me { id } }' });
      expect([name, gql.status, gql.json]).toEqual([
        name,
        400,
        { errors: [{ message: `${shown} must be sent once`, extensions: { code: 'BAD_REQUEST' } }] },
      ]);
    }
    // Once, the same token works.
    expect((await raw(`${sys.url}/profile`, 'GET', [['authorization', alice]])).status).toBe(200);
  });
});
