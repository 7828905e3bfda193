import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import {
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import { SCOPES } from '@halo/kit/auth';
import { loadManifests, manifestSource } from '../tools/src/compose-rest';
import { declaredOperations, loadSubgraphSdls, type DeclaredOperation } from '../tools/src/compose-scopes';
import { gql, startE2ESystem } from './helpers';

/**
 * Generated from the declarations, not a hand list: every authenticated REST route and every
 * GraphQL field that declares a scope (services/*\/src/rest/manifest.ts `scope`,
 * services/*\/schema.graphql `@requiresScopes`) refuses, through the gateway, an admin's API key
 * holding every scope but that one; every authenticated operation that declares none refuses a key
 * holding them all. A declaration added tomorrow is tested here without an edit.
 */
const OPERATIONS = declaredOperations(loadManifests(manifestSource), loadSubgraphSdls());
const REST = OPERATIONS.filter((o) => o.kind === 'REST');
const GRAPHQL = OPERATIONS.filter((o) => o.kind === 'GraphQL');

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let schema: GraphQLSchema;
const keys = new Map<string, string>();

beforeAll(async () => {
  sys = await startE2ESystem();
  const login = await fetch(`${sys.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@halo.local', password: 'admin-password' }),
  });
  const admin = ((await login.json()) as { token: string }).token;
  // One key per scope left out, and one with every scope.
  for (const left of [...SCOPES, null]) {
    const scopes = SCOPES.filter((s) => s !== left);
    const res = await fetch(`${sys.url}/auth/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
      body: JSON.stringify({ name: `all but ${left ?? 'none'}`, scopes }),
    });
    expect(res.status).toBe(201);
    keys.set(left ?? '', ((await res.json()) as { data: { key: string } }).data.key);
  }
  schema = buildClientSchema((await gql(sys.url, getIntrospectionQuery())).body.data as IntrospectionQuery);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

/** The key that lacks the operation's scope; for an operation with none, the key with every scope. */
const keyFor = (op: DeclaredOperation) => keys.get(op.scope ?? '')!;

it('declares something to test: REST routes and GraphQL fields of every kind', () => {
  expect(REST.length).toBeGreaterThan(5);
  for (const root of ['Query.', 'Mutation.', 'Subscription.']) expect(GRAPHQL.some((o) => o.operation.startsWith(root))).toBe(true);
  expect(OPERATIONS.filter((o) => o.scope === null).length).toBeGreaterThan(0);
});

describe('REST: 403 Forbidden for a key without the declared scope', () => {
  it.each(REST.map((o) => [o.operation, o.scope ?? '(none: every key)', o] as const))('%s needs %s', async (_, __, op) => {
    const [method, path] = op.operation.split(' ') as [string, string];
    // Any id and an empty body: the scope is checked before the input.
    const res = await fetch(`${sys.url}${path.replace(/:[A-Za-z_]+/g, '1')}`, {
      method,
      headers: { 'x-api-key': keyFor(op), 'content-type': 'application/json', 'idempotency-key': `scope-${Date.now()}` },
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
    });
    expect([res.status, await res.json()]).toEqual([403, { error: 'Forbidden' }]);
  });
});

/** A literal for a required argument of type `type` (input objects get their required fields). */
function literal(type: GraphQLInputType): string {
  const t = isNonNullType(type) ? type.ofType : type;
  if (isListType(t)) return `[${literal(t.ofType)}]`;
  if (isEnumType(t)) return t.getValues()[0]!.name;
  if (isInputObjectType(t)) {
    const fields = Object.values(t.getFields()).filter((f) => isNonNullType(f.type));
    return `{ ${fields.map((f) => `${f.name}: ${literal(f.type)}`).join(', ')} }`;
  }
  return { ID: '"1"', String: '"scope test"', Int: '1', Float: '1', Boolean: 'true' }[t.name] ?? '"1"';
}

/** `name(required args) { __typename }` for one field. */
function selection(field: GraphQLField<unknown, unknown>): string {
  const args = field.args.filter((a) => isNonNullType(a.type)).map((a) => `${a.name}: ${literal(a.type)}`);
  return `${field.name}${args.length ? `(${args.join(', ')})` : ''}${isCompositeType(getNamedType(field.type)) ? ' { __typename }' : ''}`;
}

/**
 * The operation that reaches `Type.field`: a root field directly; any other field through a public
 * query field returning its type (`User.orders` via `user(id:)`, resolved through `_entities`).
 */
function operationFor(coordinate: string): { kind: 'query' | 'mutation' | 'subscription'; text: string } {
  const [typeName, fieldName] = coordinate.split('.') as [string, string];
  const roots = { Query: 'query', Mutation: 'mutation', Subscription: 'subscription' } as const;
  const type = schema.getType(typeName) as { getFields(): Record<string, GraphQLField<unknown, unknown>> };
  const field = type.getFields()[fieldName]!;
  if (typeName in roots)
    return { kind: roots[typeName as keyof typeof roots], text: `${roots[typeName as keyof typeof roots]} { ${selection(field)} }` };
  const declared = new Set(OPERATIONS.map((o) => o.operation));
  const path = Object.values(schema.getQueryType()!.getFields()).find(
    (f) => getNamedType(f.type).name === typeName && !declared.has(`Query.${f.name}`),
  );
  if (!path) throw new Error(`no public query reaches ${coordinate}: extend this test`);
  const args = path.args.filter((a) => isNonNullType(a.type)).map((a) => `${a.name}: ${literal(a.type)}`);
  return { kind: 'query', text: `query { ${path.name}${args.length ? `(${args.join(', ')})` : ''} { ${selection(field)} } }` };
}

describe('GraphQL: FORBIDDEN for a key without the declared scope', () => {
  it.each(GRAPHQL.map((o) => [o.operation, o.scope ?? '(none: every key)', o] as const))('%s needs %s', async (_, __, op) => {
    const { kind, text } = operationFor(op.operation);
    const fieldName = op.operation.split('.')[1]!;
    if (kind === 'subscription') {
      const client = createClient({
        url: `${sys.url.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { 'x-api-key': keyFor(op) },
        retryAttempts: 0,
        shouldRetry: () => false,
      });
      try {
        const errors = await new Promise<unknown>((resolve) => {
          const timer = setTimeout(() => resolve('no answer'), 10_000);
          client.subscribe(
            { query: text },
            {
              next: (v) => (clearTimeout(timer), resolve(v.errors)),
              error: (e) => (clearTimeout(timer), resolve(e)),
              complete: () => undefined,
            },
          );
        });
        expect(errors).toEqual([
          expect.objectContaining({ message: 'Forbidden', extensions: expect.objectContaining({ code: 'FORBIDDEN' }) }),
        ]);
      } finally {
        await client.dispose();
      }
      return;
    }
    const res = await gql(sys.url, text, undefined, { 'x-api-key': keyFor(op) });
    expect(res.status).toBe(200);
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          message: 'Forbidden',
          path: expect.arrayContaining([fieldName]),
          extensions: expect.objectContaining({ code: 'FORBIDDEN' }),
        }),
      ]),
    );
  });
});

describe('other users’ emails', () => {
  const emails = (key: string) => gql(sys.url, '{ users { email } }', undefined, { 'x-api-key': key });

  it('an admin’s key without users:email:read reads "" for every other user; with it, their addresses', async () => {
    const without = await emails(keys.get('users:email:read')!);
    expect(without.body.errors).toBeUndefined();
    const others = (without.body.data.users as { email: string }[]).filter((u) => u.email !== 'admin@halo.local');
    expect(others.length).toBeGreaterThan(1);
    expect(others.every((u) => u.email === '')).toBe(true);
    const withIt = await emails(keys.get('')!);
    expect((withIt.body.data.users as { email: string }[]).map((u) => u.email)).toEqual(
      expect.arrayContaining(['alice@halo.local', 'bob@halo.local']),
    );
  });
});
