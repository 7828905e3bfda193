import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  Kind,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * The schema coordinates an operation uses, one reading for both sides of a check: the gateway
 * records them for every operation it executes (usage), the registry for every operation a client
 * app registers. graphql-js alone (`@halo/contracts/coordinates`: the gateway loads nothing else of
 * this package from here).
 */

/** The fragments an operation reaches, through fragments that spread other fragments. */
export function fragmentsUsed(document: DocumentNode, operation: OperationDefinitionNode): FragmentDefinitionNode[] {
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
 * written in it (`Input.field`), every enum value written in it (`Enum.VALUE`), every value of an
 * enum a selected field returns (a client reading that field may receive any of them), and every
 * named type it touches (`Type`: parents, field and argument types, fragment type conditions,
 * variable types). Enum values sent in variables differ per request: `enumValuesOf` reads them.
 * Introspection fields are left out.
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
      const type = getNamedType(def.type);
      out.add(type.name);
      if (isEnumType(type)) for (const value of type.getValues()) out.add(`${type.name}.${value.name}`);
    },
    EnumValue(node) {
      const type = getNamedType(typeInfo.getInputType());
      if (type && isEnumType(type)) out.add(`${type.name}.${node.value}`);
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

/** A variable whose type reaches an enum (directly, in a list, or through input object fields). */
export interface EnumVariable {
  name: string;
  type: GraphQLInputType;
}

/** The variables of an operation whose values name enum values (analysed once per operation). */
export function enumVariablesOf(schema: GraphQLSchema, operation: OperationDefinitionNode): EnumVariable[] {
  const found: EnumVariable[] = [];
  for (const def of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, def.type) as GraphQLInputType | undefined;
    if (type && reachesEnum(type, new Set())) found.push({ name: def.variable.name.value, type });
  }
  return found;
}

function reachesEnum(type: GraphQLInputType, seen: Set<string>): boolean {
  const named = getNamedType(type);
  if (isEnumType(named)) return true;
  if (!isInputObjectType(named) || seen.has(named.name)) return false;
  seen.add(named.name);
  return Object.values(named.getFields()).some((f) => reachesEnum(f.type, seen));
}

/**
 * The `Enum.VALUE` coordinates one request's variables name, added to `out` (at most `max` in
 * all): walked along the variables' types, so only values in enum positions count.
 */
export function enumValuesOf(
  variables: Readonly<Record<string, unknown>>,
  enumVariables: readonly EnumVariable[],
  out: Set<string>,
  max: number,
): void {
  const walk = (value: unknown, type: GraphQLInputType, depth: number): void => {
    if (value === null || value === undefined || out.size >= max || depth > 64) return;
    const t = getNullableType(type);
    if (isListType(t)) {
      if (Array.isArray(value)) for (const item of value) walk(item, t.ofType, depth + 1);
      else walk(value, t.ofType, depth + 1);
    } else if (isEnumType(t)) {
      if (typeof value === 'string' && t.getValue(value)) out.add(`${t.name}.${value}`);
    } else if (isInputObjectType(t) && typeof value === 'object' && !Array.isArray(value)) {
      const fields = t.getFields();
      for (const key of Object.keys(value)) {
        const field = fields[key];
        if (field) walk((value as Record<string, unknown>)[key], field.type, depth + 1);
      }
    }
  };
  for (const v of enumVariables) walk(variables[v.name], v.type, 0);
}
