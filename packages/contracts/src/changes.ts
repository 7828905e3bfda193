import { Supergraph } from '@apollo/federation-internals';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
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
