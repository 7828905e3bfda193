import { createHash } from 'node:crypto';
import { usageReportingSignature } from '@apollo/utils.usagereporting';
import {
  getNamedType,
  isInputObjectType,
  Kind,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** What the registry learns about one operation (docs/registry.md `POST /v1/usage`). */
export interface OperationUsage {
  /** sha256 (hex) of the signature. */
  hash: string;
  /** The operation's own name; '' when anonymous. */
  name: string;
  /**
   * The signature: the operation and the fragments it uses, literals hidden, aliases removed,
   * sorted, whitespace reduced (Apollo's usage-reporting signature), so the same operation with
   * other literal values or another layout is one operation, and no literal (a search term, an
   * id) ever leaves the gateway.
   */
  body: string;
  /** `Type.field`, `Type.field.arg`, `Input.field` and `Type`, sorted. */
  coordinates: string[];
}

/** The fragments an operation reaches, through fragments that spread other fragments. */
function fragmentsUsed(document: DocumentNode, operation: OperationDefinitionNode): FragmentDefinitionNode[] {
  const byName = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) byName.set(def.name.value, def);
  const used = new Map<string, FragmentDefinitionNode>();
  const walk = (set: SelectionSetNode | undefined) => {
    for (const selection of set?.selections ?? []) {
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const name = selection.name.value;
        const fragment = byName.get(name);
        if (!fragment || used.has(name)) continue;
        used.set(name, fragment);
        walk(fragment.selectionSet);
      } else walk(selection.selectionSet);
    }
  };
  walk(operation.selectionSet);
  return [...used.values()];
}

/**
 * The schema coordinates an operation uses, read with graphql-js's TypeInfo over the API schema
 * it was validated against: every field it selects (`Type.field`, through fragments, on the type
 * it is selected on), every argument it passes (`Type.field.arg`), every input object field
 * written in it (`Input.field`), and every named type it touches (`Type`: parents, field and
 * argument types, fragment type conditions, variable types). Introspection fields are left out.
 */
export function coordinatesOf(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const out = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  const visitor = visitWithTypeInfo(typeInfo, {
    Field(node) {
      const parent = typeInfo.getParentType();
      const def = typeInfo.getFieldDef();
      if (!parent || !def || node.name.value.startsWith('__')) return;
      out.add(parent.name);
      out.add(`${parent.name}.${def.name}`);
      out.add(getNamedType(def.type).name);
    },
    Argument() {
      // A directive's argument (`@include(if:)`) is not a schema coordinate of the graph's.
      if (typeInfo.getDirective()) return;
      const parent = typeInfo.getParentType();
      const field = typeInfo.getFieldDef();
      const arg = typeInfo.getArgument();
      if (!parent || !field || !arg) return;
      out.add(`${parent.name}.${field.name}.${arg.name}`);
      out.add(getNamedType(arg.type).name);
    },
    ObjectField(node) {
      const parent = getNamedType(typeInfo.getParentInputType());
      if (!parent || !isInputObjectType(parent)) return;
      out.add(parent.name);
      out.add(`${parent.name}.${node.name.value}`);
    },
    VariableDefinition(node) {
      const type = typeFromAST(schema, node.type);
      if (type) out.add(getNamedType(type).name);
    },
    InlineFragment() {
      const type = getNamedType(typeInfo.getType());
      if (type) out.add(type.name);
    },
    FragmentDefinition() {
      const type = getNamedType(typeInfo.getType());
      if (type) out.add(type.name);
    },
  });
  visit(operation, visitor);
  for (const fragment of fragmentsUsed(document, operation)) visit(fragment, visitor);
  return [...out].sort();
}

/** What the registry takes per report (docs/registry.md `POST /v1/usage`): longer is cut. */
const MAX_NAME = 200;
const MAX_BODY = 100_000;
const MAX_COORDINATES = 5_000;
const MAX_COORDINATE = 300;

/** One operation's usage record: its signature, hash and coordinates, within the registry's bounds. */
export function operationUsage(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): OperationUsage {
  const name = operation.name?.value ?? '';
  // The signature keeps only the named operation (the document may hold several).
  const body = usageReportingSignature(document, name);
  return {
    // Of the whole signature: a body cut to the bound still has its own hash.
    hash: createHash('sha256').update(body).digest('hex'),
    name: name.slice(0, MAX_NAME),
    body: body.slice(0, MAX_BODY),
    coordinates: coordinatesOf(schema, document, operation)
      .filter((c) => c.length <= MAX_COORDINATE)
      .slice(0, MAX_COORDINATES),
  };
}

const CLIENT_NAME_MAX = 64;
const NOT_CLIENT_NAME = /[^A-Za-z0-9._/-]+/g;
export const UNKNOWN_CLIENT = 'unknown';

/**
 * The client's name as the registry stores it (docs/registry.md): `apollographql-client-name`,
 * else `x-client-name`, else `unknown`; only `[A-Za-z0-9._/-]`, at most 64 characters.
 */
export function clientNameOf(apolloName: string | undefined, haloName: string | undefined): string {
  const raw = apolloName || haloName;
  if (!raw) return UNKNOWN_CLIENT;
  const clean = raw.replace(NOT_CLIENT_NAME, '').slice(0, CLIENT_NAME_MAX);
  return clean === '' ? UNKNOWN_CLIENT : clean;
}
