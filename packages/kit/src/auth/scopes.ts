import {
  defaultFieldResolver,
  isObjectType,
  Kind,
  type ConstDirectiveNode,
  type DocumentNode,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql';
import { forbidden } from '../errors/errors';
import type { Caller } from './jwt';

/**
 * What an API key may be granted. A key acts as its owner (role) intersected with its scopes:
 * every authenticated operation declares the scope a key needs, next to the operation (a REST
 * manifest's `scope`, `@requiresScopes` in a subgraph's SDL), and the kit refuses a key without it
 * — or any key, when the operation declares none. A user's own token is not scope-limited.
 * `users:email:read` is not an operation's: it lets a key read other users' emails (content).
 */
export const SCOPES = [
  'profile:read',
  'users:write',
  'users:email:read',
  'catalog:write',
  'payments:read',
  'payments:write',
  'chat:read',
  'chat:write',
  // The schema registry (docs/registry.md): read the registry and its Studio (every write
  // scope below implies it)…
  'schema:read',
  // …and check, publish and roll back service contracts: every service's, or one service's (a
  // team's CI key).
  'schema:write',
  'schema:write:auth',
  'schema:write:catalog',
  'schema:write:chat',
  'schema:write:content',
  'schema:write:payments',
  // Push and retire client apps' operation lists at the registry (docs/registry.md, "Client
  // operation lists"), for every client; `operations:write:<client>` (CLIENT_OPERATIONS_SCOPE) for
  // one client only: the key an app team's CI holds. Either implies reading the registry.
  'operations:write',
] as const;

/**
 * `operations:write:<client>`: `operations:write` for one client app, named as the registry
 * names clients (1 to 64 characters of `[A-Za-z0-9._@/-]`: `web`, `@halo/client`). Client names
 * are the client teams', not a list Halo knows, so these are matched by pattern, not listed.
 */
export const CLIENT_OPERATIONS_SCOPE = /^operations:write:[A-Za-z0-9._@/-]{1,64}$/;
export type ClientOperationsScope = `operations:write:${string}`;
export type Scope = (typeof SCOPES)[number] | ClientOperationsScope;

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s) || CLIENT_OPERATIONS_SCOPE.test(s);

/** True for a user's own token, and for a key that holds `scope`. */
export const holdsScope = (caller: Caller, scope: Scope): boolean => caller.scopes === null || caller.scopes.includes(scope);

/**
 * The one rule for API keys on an authenticated operation: 403 `Forbidden` unless the operation
 * declares a scope the key holds. `anyOf` is the declaration (any one of its sets, all of that
 * set's scopes); empty: none declared. Anonymous callers and users' own tokens pass (who may call
 * at all stays the operation's own check).
 */
export function requireDeclaredScope(caller: Caller | null, anyOf: readonly (readonly string[])[]): void {
  if (caller === null || caller.scopes === null) return;
  const held = caller.scopes;
  if (!anyOf.some((set) => set.length > 0 && set.every((s) => held.includes(s)))) throw forbidden();
}

/** What a subgraph's SDL declares about one field: `@authenticated`, and `@requiresScopes` sets. */
export interface FieldAccess {
  authenticated: boolean;
  scopes: string[][];
}

/**
 * Every field of a subgraph's SDL that `@authenticated` or `@requiresScopes` marks, as
 * `Type.field` → its access. Throws on a scope that is not one of `SCOPES` (a typo would
 * otherwise lock every key out of the field).
 */
export function declaredFieldAccess(typeDefs: DocumentNode): Map<string, FieldAccess> {
  const out = new Map<string, FieldAccess>();
  const named = (d: ConstDirectiveNode, name: string) => d.name.value === name || d.name.value === `federation__${name}`;
  for (const def of typeDefs.definitions) {
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.OBJECT_TYPE_EXTENSION) continue;
    const typeAuthenticated = def.directives?.some((d) => named(d, 'authenticated')) ?? false;
    for (const f of def.fields ?? []) {
      const authenticated = typeAuthenticated || (f.directives?.some((d) => named(d, 'authenticated')) ?? false);
      const scopes: string[][] = [];
      for (const d of f.directives ?? []) {
        if (!named(d, 'requiresScopes')) continue;
        const arg = d.arguments?.find((a) => a.name.value === 'scopes')?.value;
        if (arg?.kind !== Kind.LIST) continue;
        for (const set of arg.values) {
          const list = set.kind === Kind.LIST ? set.values : [set];
          scopes.push(list.map((v) => (v.kind === Kind.STRING ? v.value : '')));
        }
      }
      const where = `${def.name.value}.${f.name.value}`;
      for (const s of scopes.flat())
        if (!isScope(s)) throw new Error(`${where}: @requiresScopes names an unknown scope ${JSON.stringify(s)}`);
      if (authenticated || scopes.length > 0) out.set(where, { authenticated, scopes });
    }
  }
  return out;
}

/**
 * Applies `requireDeclaredScope` to every field the SDL marks (its resolver and, for a
 * subscription, its subscribe), whichever path reaches it (`_entities` included). The context
 * carries `caller`, as the kit's HTTP and WebSocket transports set it.
 */
export function enforceDeclaredScopes(schema: GraphQLSchema, typeDefs: DocumentNode): GraphQLSchema {
  for (const [coordinate, access] of declaredFieldAccess(typeDefs)) {
    const [typeName, fieldName] = coordinate.split('.') as [string, string];
    const type = schema.getType(typeName);
    const field = isObjectType(type) ? type.getFields()[fieldName] : undefined;
    if (!field) continue;
    const check = (ctx: unknown) => requireDeclaredScope((ctx as { caller?: Caller | null } | undefined)?.caller ?? null, access.scopes);
    const resolve: GraphQLFieldResolver<unknown, unknown> = field.resolve ?? defaultFieldResolver;
    field.resolve = (source, args, ctx, info) => {
      check(ctx);
      return resolve(source, args, ctx, info);
    };
    const subscribe = field.subscribe;
    if (subscribe) {
      field.subscribe = (source, args, ctx, info) => {
        check(ctx);
        return subscribe(source, args, ctx, info);
      };
    }
  }
  return schema;
}
