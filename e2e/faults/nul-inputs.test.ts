import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { bearer, startE2ESystem } from '../helpers';

/**
 * A NUL character (U+0000, which PostgreSQL cannot store) in any string input is the client's
 * mistake, never a 500 (docs/api/conventions.md). The cases are generated, not listed: every
 * parameter, query parameter and body field of every REST route of the composed OpenAPI document
 * (checked to cover the composed route table), plus an undeclared query parameter on each; and
 * every String/ID argument (and String/ID field of an input argument) of every field of the
 * supergraph. Each goes through the gateway of the real system with an admin's token, so every
 * check of who may call passes and the NUL rule is what answers.
 */
const ROOT = resolve(__dirname, '../..');
type Route = { method: string; path: string };
const ROUTES = (JSON.parse(readFileSync(resolve(ROOT, 'gateway/routes.json'), 'utf8')) as { routes: Route[] }).routes;
type Param = { name: string; in: 'path' | 'query' };
type Operation = {
  parameters?: Param[];
  requestBody?: { content: { 'application/json': { schema: { properties?: Record<string, unknown> } } } };
};
const OPENAPI = JSON.parse(readFileSync(resolve(ROOT, 'gateway/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
const SUPERGRAPH = buildSchema(readFileSync(resolve(ROOT, 'gateway/supergraph.graphql'), 'utf8'), { assumeValidSDL: true });

const ADMIN = bearer('1', 'Admin', 'admin');
const nulMessage = (field: string) => `${field} must not contain NUL characters`;

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
beforeAll(async () => {
  sys = await startE2ESystem();
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

// ── REST ──────────────────────────────────────────────────────────────────────────────────────

interface RestCase {
  name: string;
  method: string;
  url: string;
  body?: Record<string, unknown>;
  field: string;
}

function restCases(): RestCase[] {
  const cases: RestCase[] = [];
  for (const [path, item] of Object.entries(OPENAPI.paths)) {
    for (const [lower, op] of Object.entries(item)) {
      const method = lower.toUpperCase();
      const params = op.parameters ?? [];
      const pathParams = params.filter((p) => p.in === 'path').map((p) => p.name);
      const urlWith = (nul?: string) => path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === nul ? 'a%00b' : '1'));
      const base = { method, body: op.requestBody ? {} : undefined };
      for (const name of pathParams) cases.push({ ...base, name: `${method} ${path} path ${name}`, url: urlWith(name), field: name });
      for (const p of params.filter((x) => x.in === 'query')) {
        cases.push({ ...base, name: `${method} ${path} query ${p.name}`, url: `${urlWith()}?${p.name}=%00`, field: p.name });
      }
      // Undeclared parameters are client text too.
      cases.push({ ...base, name: `${method} ${path} query probe`, url: `${urlWith()}?probe=x%00`, field: 'probe' });
      if (op.requestBody) {
        const props = Object.keys(op.requestBody.content['application/json'].schema.properties ?? {});
        for (const prop of props.length > 0 ? props : ['probe']) {
          cases.push({ method, name: `${method} ${path} body ${prop}`, url: urlWith(), body: { [prop]: 'x\u0000' }, field: prop });
        }
        cases.push({
          method,
          name: `${method} ${path} body nested`,
          url: urlWith(),
          body: { probe: { list: ['ok', '\u0000'] } },
          field: 'probe.list.1',
        });
      }
    }
  }
  return cases;
}

describe('REST: every input of every route of the composed manifest', () => {
  const cases = restCases();

  it('covers every route of the composed route table', () => {
    const covered = new Set(cases.map((c) => `${c.method} ${c.url.split('?')[0]!.replace(/a%00b/g, '1')}`));
    for (const r of ROUTES) expect(covered).toContain(`${r.method} ${r.path.replace(/:\w+/g, '1')}`);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s → 400 naming the field', async (_name, c) => {
    const res = await fetch(`${sys.url}${c.url}`, {
      method: c.method,
      headers: { ...ADMIN, 'idempotency-key': `nul-${Math.random()}`, ...(c.body ? { 'content-type': 'application/json' } : {}) },
      ...(c.body ? { body: JSON.stringify(c.body) } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(10_000),
    });
    // `?version=` is the gateway's own parameter (version negotiation, docs/api/conventions.md): it
    // refuses any value but a known version before the service sees the request.
    const expected = c.field === 'version' && c.url.includes('?version=') ? 'Unsupported API version' : nulMessage(c.field);
    expect([c.name, res.status, await res.json()]).toEqual([c.name, 400, { error: expected }]);
  });
});

// ── GraphQL ───────────────────────────────────────────────────────────────────────────────────

/** A valid value of an input type (required fields only), for the arguments not under test. */
function sample(type: GraphQLInputType): unknown {
  const t = getNullableType(type);
  if (isListType(t)) return [sample(t.ofType)];
  if (isEnumType(t)) return t.getValues()[0]!.value;
  if (isInputObjectType(t)) {
    const out: Record<string, unknown> = {};
    for (const f of Object.values(t.getFields())) if (isNonNullType(f.type)) out[f.name] = sample(f.type);
    return out;
  }
  const name = isScalarType(t) ? t.name : 'String';
  return { Int: 1, Float: 1, Boolean: true, ID: '1' }[name] ?? 'x';
}

const isText = (type: GraphQLInputType) => ['String', 'ID'].includes(getNamedType(type).name);

/** Every way a NUL can sit in one argument: the argument itself, or a text field of its input (nested). */
function nulPlacements(type: GraphQLInputType, path: string[], seen = new Set<string>()): { path: string[]; value: unknown }[] {
  const t = getNullableType(type);
  if (isListType(t)) return nulPlacements(t.ofType, [...path, '0'], seen).map((p) => ({ ...p, value: [p.value] }));
  if (isText(t)) return [{ path, value: 'x\u0000' }];
  if (!isInputObjectType(t) || seen.has(t.name)) return [];
  const out: { path: string[]; value: unknown }[] = [];
  for (const f of Object.values(t.getFields())) {
    for (const inner of nulPlacements(f.type, [...path, f.name], new Set([...seen, t.name]))) {
      out.push({ path: inner.path, value: { ...(sample(t) as object), [f.name]: inner.value } });
    }
  }
  return out;
}

interface GraphQLCase {
  name: string;
  operation: 'query' | 'mutation' | 'subscription';
  query: string;
  variables: Record<string, unknown>;
  field: string;
}

/**
 * The shortest selection from a root type to each object type (fields without required arguments
 * get samples), so a field with arguments on a nested type is reached too.
 */
function routesToTypes(root: GraphQLObjectType): Map<string, { open: string; close: string }> {
  const paths = new Map<string, { open: string; close: string }>([[root.name, { open: '', close: '' }]]);
  const queue = [root];
  while (queue.length > 0) {
    const type = queue.shift()!;
    for (const field of Object.values(type.getFields())) {
      const target = getNamedType(field.type);
      if (!isObjectType(target) || paths.has(target.name) || field.args.some((a) => isNonNullType(a.type))) continue;
      const prefix = paths.get(type.name)!;
      paths.set(target.name, { open: `${prefix.open}${field.name} { `, close: ` }${prefix.close}` });
      queue.push(target);
    }
  }
  return paths;
}

function graphqlCases(): GraphQLCase[] {
  const cases: GraphQLCase[] = [];
  for (const operation of ['query', 'mutation', 'subscription'] as const) {
    const root = {
      query: SUPERGRAPH.getQueryType(),
      mutation: SUPERGRAPH.getMutationType(),
      subscription: SUPERGRAPH.getSubscriptionType(),
    }[operation];
    if (!root) continue;
    const reach = routesToTypes(root);
    for (const [typeName, path] of reach) {
      const type = SUPERGRAPH.getType(typeName) as GraphQLObjectType;
      for (const field of Object.values(type.getFields()) as GraphQLField<unknown, unknown>[]) {
        if (field.name.startsWith('_')) continue;
        for (const arg of field.args) {
          for (const placement of nulPlacements(arg.type, [arg.name])) {
            const args = field.args.filter((a: GraphQLArgument) => a === arg || isNonNullType(a.type));
            const variables = Object.fromEntries(args.map((a) => [a.name, a === arg ? placement.value : sample(a.type)]));
            const decl = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
            const call = args.map((a) => `${a.name}: $${a.name}`).join(', ');
            const selection = isObjectType(getNamedType(field.type)) ? ' { __typename }' : '';
            cases.push({
              name: `${typeName}.${field.name}(${placement.path.join('.')})`,
              operation,
              query: `${operation}(${decl}) { ${path.open}${field.name}(${call})${selection}${path.close} }`,
              variables,
              field: placement.path.join('.'),
            });
          }
        }
      }
    }
  }
  return cases;
}

describe('GraphQL: every string argument of the supergraph', () => {
  const cases = graphqlCases();

  it('finds the arguments the issue reported (the generator is not empty)', () => {
    const names = cases.map((c) => c.name);
    for (const expected of [
      'Query.products(category)',
      'Mutation.createProduct(input.name)',
      'Mutation.createUser(email)',
      'Mutation.createOrder(clientOrderId)',
      'Mutation.createPayment(idempotencyKey)',
      'Subscription.newMessage(chatId)',
    ]) {
      expect(names).toContain(expected);
    }
  });

  const overHttp = cases.filter((c) => c.operation !== 'subscription');
  it.each(overHttp.map((c) => [c.name, c] as const))('%s → 200, BAD_USER_INPUT naming the argument, nothing internal', async (_name, c) => {
    const res = await fetch(`${sys.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ADMIN },
      body: JSON.stringify({ query: c.query, variables: c.variables }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { errors?: { message: string; extensions?: { code?: string } }[] };
    const errors = (body.errors ?? []).map((e) => [e.extensions?.code, e.message]);
    expect({ case: c.name, status: res.status, errors }).toEqual({
      case: c.name,
      status: 200,
      errors: [['BAD_USER_INPUT', nulMessage(c.field)]],
    });
  });

  it('the same, with the NUL in a string literal instead of a variable', async () => {
    const res = await fetch(`${sys.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ADMIN },
      body: JSON.stringify({ query: 'mutation { createProduct(input: { name: "a\\u0000", category: "books", price: 1 }) { id } }' }),
    });
    expect([res.status, await res.json()]).toEqual([
      200,
      {
        data: null,
        errors: [
          expect.objectContaining({ message: nulMessage('input.name'), extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) }),
        ],
      },
    ]);
  });

  const overWebSocket = cases.filter((c) => c.operation === 'subscription');
  it.each(overWebSocket.map((c) => [c.name, c] as const))(
    '%s over WebSocket → an error frame with BAD_USER_INPUT naming the argument',
    async (_name, c) => {
      const client = createClient({
        url: `${sys.url.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: ADMIN.authorization },
        retryAttempts: 0,
      });
      try {
        const errors = await new Promise<unknown>((resolve, reject) => {
          client.subscribe(
            { query: c.query, variables: c.variables },
            { next: () => reject(new Error('an event arrived')), error: resolve, complete: () => reject(new Error('completed')) },
          );
        });
        expect((errors as { message: string; extensions?: { code?: string } }[]).map((e) => [e.extensions?.code, e.message])).toEqual([
          ['BAD_USER_INPUT', nulMessage(c.field)],
        ]);
      } finally {
        await client.dispose();
      }
    },
  );
});
