import { getNamedType, isEnumType, isInputObjectType, Kind, type DocumentNode, type GraphQLInputType, type GraphQLSchema } from 'graphql';
import { coordinatesOf, enumVariablesOf } from './coordinates';

/**
 * The usage coordinates of a registered operation (docs/registry.md, "Matching a change to
 * usage"), read as the gateway reads an executed one (`coordinatesOf`): `Type.field` for every
 * field it selects (through fragments), `Type.field.arg` for every argument it passes,
 * `Input.field` and `Enum.VALUE` for every input field and enum value written in it, every value
 * of an enum a selected field returns, and `Type` for every named type it touches. A registered
 * operation has not sent its variables yet, so a variable whose type reaches an enum may send any
 * of its values: all of them count (the gateway counts only those a request sent). A change at
 * path `P` is used by an operation that recorded `P` or a coordinate under `P.`.
 */
export function operationCoordinates(schema: GraphQLSchema, document: DocumentNode): string[] {
  const out = new Set<string>();
  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const c of coordinatesOf(schema, document, def)) out.add(c);
    for (const v of enumVariablesOf(schema, def)) addEnumValues(v.type, out, new Set());
  }
  return [...out].sort();
}

/** Every `Enum.VALUE` a value of `type` can name (through lists and input object fields). */
function addEnumValues(type: GraphQLInputType, out: Set<string>, seen: Set<string>): void {
  const named = getNamedType(type);
  if (seen.has(named.name)) return;
  seen.add(named.name);
  if (isEnumType(named)) for (const value of named.getValues()) out.add(`${named.name}.${value.name}`);
  else if (isInputObjectType(named)) for (const field of Object.values(named.getFields())) addEnumValues(field.type, out, seen);
}

/** Whether an operation that recorded `coordinates` uses the schema element at `path`. */
export function usesPath(coordinates: readonly string[], path: string): boolean {
  if (!path) return false;
  const under = `${path}.`;
  return coordinates.some((c) => c === path || c.startsWith(under));
}

/** Recorded usage of one operation by one client version (summed over the window). */
export interface OperationUsage {
  name: string;
  hash: string;
  client: string;
  /** The version the client declared; null when it declared none. */
  clientVersion: string | null;
  count: number;
  lastSeen: string;
  coordinates: readonly string[];
  /**
   * An operation a client registered for a version it ships (`POST /v1/operations`), not one a
   * gateway counted: `hash` is its id, `clientVersion` the version, `count` 0 and `lastSeen` when
   * its list was pushed. Any use by one blocks a breaking change, whatever the threshold.
   */
  registered?: true;
}

export interface ChangeUsage {
  count: number;
  operations: Omit<OperationUsage, 'coordinates'>[];
}

/** The usage of the schema element at `path`: the operations that use it, busiest first. */
export function usageOf(path: string, usage: readonly OperationUsage[]): ChangeUsage {
  const operations = usage
    .filter((u) => usesPath(u.coordinates, path))
    .map(({ coordinates: _c, ...u }) => u)
    .sort(
      (a, b) =>
        b.count - a.count ||
        a.name.localeCompare(b.name) ||
        a.client.localeCompare(b.client) ||
        (a.clientVersion ?? '').localeCompare(b.clientVersion ?? ''),
    );
  return { count: operations.reduce((n, o) => n + o.count, 0), operations };
}
