import { apiSchemaOf } from '@halo/contracts';
import {
  Kind,
  parse,
  print,
  type ConstDirectiveNode,
  type DefinitionNode,
  type FieldDefinitionNode,
  type InputValueDefinitionNode,
  type EnumValueDefinitionNode,
} from 'graphql';

/**
 * The API schema a supergraph serves, as the Studio's schema explorer shows it: each type and
 * field with the services that resolve it (the supergraph's `@join__type` / `@join__field`), its
 * description, deprecation, cost weight and access directives. Only what clients can see: the API
 * schema (join/link machinery and inaccessible parts removed) decides which types and fields exist.
 */
export interface SchemaField {
  name: string;
  /** The field's type as written (`[Product!]!`). */
  type: string;
  description: string | null;
  deprecated: string | null;
  owners: string[];
  cost: number | null;
  authenticated: boolean;
  /** `@requiresScopes`: any one of these sets, all of a set's scopes. */
  scopes: string[][];
  args: { name: string; type: string; description: string | null }[];
}

export interface SchemaType {
  name: string;
  kind: 'object' | 'interface' | 'input' | 'enum' | 'union' | 'scalar';
  description: string | null;
  owners: string[];
  /** Fields (objects, interfaces, inputs) or values (enums). */
  fields: SchemaField[];
}

type Named = DefinitionNode & { name: { value: string }; directives?: readonly ConstDirectiveNode[] };

const KINDS: Partial<Record<Kind, SchemaType['kind']>> = {
  [Kind.OBJECT_TYPE_DEFINITION]: 'object',
  [Kind.INTERFACE_TYPE_DEFINITION]: 'interface',
  [Kind.INPUT_OBJECT_TYPE_DEFINITION]: 'input',
  [Kind.ENUM_TYPE_DEFINITION]: 'enum',
  [Kind.UNION_TYPE_DEFINITION]: 'union',
  [Kind.SCALAR_TYPE_DEFINITION]: 'scalar',
};

const argOf = (d: ConstDirectiveNode, name: string) => d.arguments?.find((a) => a.name.value === name)?.value;

/** Every type of the API schema, sorted: root types first, then by name. */
export function schemaModel(supergraph: string): SchemaType[] {
  const api = apiSchemaOf(supergraph);
  const doc = parse(supergraph);
  // join__Graph's values name the services: `CATALOG @join__graph(name: "catalog", …)`.
  const graphs = new Map<string, string>();
  const defs = new Map<string, Named>();
  for (const def of doc.definitions) {
    if (!('name' in def) || !def.name) continue;
    defs.set(def.name.value, def as Named);
    if (def.kind === Kind.ENUM_TYPE_DEFINITION && def.name.value === 'join__Graph') {
      for (const v of def.values ?? []) {
        const named = v.directives?.find((d) => d.name.value === 'join__graph');
        const name = named && argOf(named, 'name');
        graphs.set(v.name.value, name?.kind === Kind.STRING ? name.value : v.name.value.toLowerCase());
      }
    }
  }
  const ownersOf = (directives: readonly ConstDirectiveNode[] | undefined, directive: string) => {
    const out = new Set<string>();
    for (const d of directives ?? []) {
      if (d.name.value !== directive) continue;
      // A field its owner only marks @external is not resolved there.
      const external = argOf(d, 'external');
      if (external?.kind === Kind.BOOLEAN && external.value) continue;
      const g = argOf(d, 'graph');
      if (g?.kind === Kind.ENUM) out.add(graphs.get(g.value) ?? g.value);
    }
    return [...out].sort();
  };
  const types: SchemaType[] = [];
  for (const type of Object.values(api.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    const def = defs.get(type.name);
    const kind = def ? KINDS[def.kind] : undefined;
    if (!def || !kind) continue; // a built-in scalar
    const typeOwners = ownersOf(def.directives, 'join__type');
    const visible = new Set(
      'getFields' in type ? Object.keys(type.getFields()) : 'getValues' in type ? type.getValues().map((v) => v.name) : [],
    );
    const members =
      ('fields' in def ? (def.fields as readonly (FieldDefinitionNode | InputValueDefinitionNode)[]) : undefined) ??
      ('values' in def ? (def.values as readonly EnumValueDefinitionNode[]) : undefined) ??
      [];
    const fields = members
      .filter((f) => visible.has(f.name.value))
      .map((f) => fieldOf(f, typeOwners, ownersOf((f as FieldDefinitionNode).directives, 'join__field')));
    types.push({ name: type.name, kind, description: type.description ?? null, owners: typeOwners, fields });
  }
  const roots = ['Query', 'Mutation', 'Subscription'];
  return types.sort((a, b) => rank(a.name, roots) - rank(b.name, roots) || a.name.localeCompare(b.name));
}

const rank = (name: string, roots: string[]) => (roots.includes(name) ? roots.indexOf(name) : roots.length);

function fieldOf(
  f: FieldDefinitionNode | InputValueDefinitionNode | EnumValueDefinitionNode,
  typeOwners: string[],
  own: string[],
): SchemaField {
  const directive = (name: string) => f.directives?.find((d) => d.name.value === name);
  const deprecated = directive('deprecated');
  const reason = deprecated && argOf(deprecated, 'reason');
  const cost = directive('cost');
  const weight = cost && argOf(cost, 'weight');
  const scopes = directive('requiresScopes');
  const sets = scopes && argOf(scopes, 'scopes');
  return {
    name: f.name.value,
    type: 'type' in f ? print(f.type) : '',
    description: f.description?.value ?? null,
    deprecated: deprecated ? (reason?.kind === Kind.STRING ? reason.value : 'No longer supported') : null,
    owners: own.length > 0 ? own : typeOwners,
    cost: weight?.kind === Kind.INT ? Number(weight.value) : null,
    authenticated: directive('authenticated') !== undefined,
    scopes:
      sets?.kind === Kind.LIST
        ? sets.values.map((set) => (set.kind === Kind.LIST ? set.values.flatMap((s) => (s.kind === Kind.STRING ? [s.value] : [])) : []))
        : [],
    args:
      'arguments' in f && f.arguments
        ? f.arguments.map((a) => ({ name: a.name.value, type: print(a.type), description: a.description?.value ?? null }))
        : [],
  };
}
