import { Supergraph } from '@apollo/federation-internals';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import type { ComposedRoute } from '@halo/kit/rest';
import type { GraphQLSchema } from 'graphql';

/**
 * Changes between two supergraphs as clients see them: the API schemas (what `/graphql` serves)
 * compared by @graphql-inspector/core. `npm run compose` and the registry's checks both use it.
 */
export interface SchemaChange {
  /** The change's kind and schema coordinate, as @graphql-inspector/core names them. */
  type: string;
  path: string;
  message: string;
  breaking: boolean;
}

/** The API schema of a supergraph (join/link machinery and inaccessible parts removed). */
export function apiSchemaOf(supergraphSdl: string): GraphQLSchema {
  // The features a gateway must implement (e.g. @authenticated for SECURITY) are not this
  // comparison's business: accept them all.
  return Supergraph.build(supergraphSdl, { supportedFeatures: null }).apiSchema().toGraphQLJSSchema();
}

/** Every change from `before` to `after`. */
export async function schemaChanges(before: string, after: string): Promise<SchemaChange[]> {
  const changes = await diff(apiSchemaOf(before), apiSchemaOf(after));
  return changes.map((c) => ({
    type: c.type as string,
    path: c.path ?? '',
    message: c.message,
    breaking: c.criticality.level === CriticalityLevel.Breaking,
  }));
}

/** Every change from `before` to `after` that breaks existing clients. */
export async function breakingChanges(before: string, after: string): Promise<SchemaChange[]> {
  return (await schemaChanges(before, after)).filter((c) => c.breaking);
}

/** What identifies a change for an acknowledgement: its kind and coordinate. */
export const changeKey = (c: { type: string; path?: string | undefined }) => `${c.type} ${c.path ?? ''}`;

/** The changes no entry of `acknowledged` covers. */
export function unacknowledged<C extends { type: string; path: string }>(
  changes: readonly C[],
  acknowledged: readonly { type: string; path: string }[],
): C[] {
  const known = new Set(acknowledged.map(changeKey));
  return changes.filter((c) => !known.has(changeKey(c)));
}

export function describeChanges(changes: readonly SchemaChange[]): string {
  return changes.map((c) => `  - ${c.message} [${c.type} ${c.path}]`).join('\n');
}

/** What REST changes are named by: `type` as below, `path` as `GET /products v1`. */
export const REST_CHANGE_TYPES = ['REST_ROUTE_REMOVED', 'REST_ROUTE_AUTH_ADDED', 'REST_ROUTE_ADDED'] as const;

/** The versions a composed route serves (absent: version 1 only). */
const versionsOf = (r: ComposedRoute) => r.versions ?? [1];

/**
 * The REST changes from one route table to the next, one per method, path and version, as clients
 * see them. Removing what a client calls breaks it, unless that version's announced sunset has
 * passed (that is what a sunset is for); requiring a token where none was needed breaks it too.
 * Adding is not breaking. A route moving from one service to another is invisible to clients.
 */
export function restChanges(before: readonly ComposedRoute[], after: readonly ComposedRoute[], now = new Date()): SchemaChange[] {
  const key = (r: ComposedRoute, v: number) => `${r.method} ${r.path} v${v}`;
  const index = (routes: readonly ComposedRoute[]) => new Map(routes.flatMap((r) => versionsOf(r).map((v) => [key(r, v), r] as const)));
  const was = index(before);
  const is = index(after);
  const changes: SchemaChange[] = [];
  for (const [path, old] of was) {
    const next = is.get(path);
    const version = path.slice(path.lastIndexOf(' v') + 2);
    if (!next) {
      const sunset = old.deprecated?.[version]?.sunset;
      const past = sunset !== undefined && Date.parse(sunset) <= now.getTime();
      changes.push({
        type: 'REST_ROUTE_REMOVED',
        path,
        message: past ? `'${path}' was removed after its sunset (${sunset})` : `'${path}' was removed`,
        breaking: !past,
      });
    } else if (next.auth && !old.auth) {
      changes.push({ type: 'REST_ROUTE_AUTH_ADDED', path, message: `'${path}' now requires a token`, breaking: true });
    }
  }
  for (const path of is.keys()) {
    if (!was.has(path)) changes.push({ type: 'REST_ROUTE_ADDED', path, message: `'${path}' was added`, breaking: false });
  }
  return changes;
}

/** Whether a change is one of restChanges' (the registry records no REST usage to weigh it by). */
export const isRestChange = (c: { type: string }) => (REST_CHANGE_TYPES as readonly string[]).includes(c.type);
