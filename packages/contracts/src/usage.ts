import { getNamedType, Kind, TypeInfo, visit, visitWithTypeInfo, type DocumentNode, type GraphQLSchema } from 'graphql';

/**
 * Usage coordinates (docs/registry.md, "Matching a change to usage"): an operation uses
 * `Type.field` for every field it selects (through fragments), `Type.field.arg` for every argument
 * it passes, and `Type` for every named type it touches. A change at path `P` is used by an
 * operation that recorded `P` or a coordinate under `P.`.
 */
export function operationCoordinates(schema: GraphQLSchema, document: DocumentNode): string[] {
  const out = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        if (!parent || !field) return;
        out.add(parent.name);
        out.add(`${parent.name}.${field.name}`);
        out.add(getNamedType(field.type).name);
      },
      Argument(node) {
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        const arg = typeInfo.getArgument();
        if (parent && field && arg) {
          out.add(`${parent.name}.${field.name}.${node.name.value}`);
          out.add(getNamedType(arg.type).name);
        }
      },
      ObjectField() {
        const input = typeInfo.getParentInputType();
        const named = input ? getNamedType(input) : undefined;
        if (named) out.add(named.name);
      },
      VariableDefinition(node) {
        let t = node.type;
        while (t.kind !== Kind.NAMED_TYPE) t = t.type;
        out.add(t.name.value);
      },
    }),
  );
  return [...out].sort();
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
