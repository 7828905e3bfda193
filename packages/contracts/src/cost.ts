import {
  isTypeDefinitionNode,
  isTypeExtensionNode,
  Kind,
  OperationTypeNode,
  parse,
  type ConstDirectiveNode,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';
import {
  capped,
  CostCompiler,
  isConstant,
  makeConstant,
  sum,
  valueOf,
  type CostDirectives,
  type ListSize,
  type Resolve,
} from './cost-compiler';
import { specLink, stringArg } from './links';

/**
 * Depth and cost of an operation, before anything is planned or sent to a subgraph: the one
 * algorithm behind the gateway's limits (gateway/src/graphql/limits.ts, on every request) and the
 * registry's check of a pushed client operation (`checkOperation`, ./operations.ts). The gateway
 * imports it as `@halo/contracts/cost`, which loads graphql-js and nothing else of this package.
 *
 * Cost follows the IBM GraphQL cost specification the way Apollo Router's demand control reads
 * it from federation's `@cost`/`@listSize`. Those directives are in the supergraph only (the API
 * schema Apollo validates against drops them), so `readCostDirectives` takes them from the
 * supergraph's AST, by the names its `@link` to the cost spec gives them.
 *
 * - A field costs `count × (type cost + its selections) + its arguments`. The type cost is the
 *   field's `@cost(weight)`, else its return type's, else 1 for objects, interfaces and unions and
 *   0 for scalars and enums. A mutation adds 10.
 * - `count` is 1 unless the field is a list: then the largest slicing argument given (literal or
 *   variable), else the `@listSize` assumedSize, else the default list size. With `sizedFields`
 *   that size applies to the named child fields instead (connections: `edges`, `data`).
 * - An argument costs its `@cost` weight; an input object its weight (else 1) plus its fields; a
 *   list its weight plus each item's (variables included).
 * - `__typename` costs nothing, and so does introspection (`__schema`, `__type`): it is answered
 *   by the gateway itself, and graphql-js's MaxIntrospectionDepthRule plus the token and alias
 *   caps bound it. Neither counts towards depth either.
 * - Fields skipped by a literal `@skip(if: true)` / `@include(if: false)` count for nothing;
 *   a variable condition counts as included (the estimate is an upper bound).
 *
 * Depth is the longest chain of nested fields, root fields being depth 1; fragments and inline
 * fragments add no depth of their own.
 *
 * Analysis happens once per document and operation (`analyse`, cached by the caller): the cost
 * becomes a small function of the variables, so a repeated query only evaluates numbers. A
 * fragment is compiled once per place it can be sized from, and evaluated once per request, so
 * fragments spreading fragments many times over cost linear time, not exponential. A fragment
 * cycle (validation refuses those first) measures as infinitely deep and expensive.
 */

export type { CostDirectives, ListSize } from './cost-compiler';

export const NO_COST_DIRECTIVES: CostDirectives = { types: new Map(), fields: new Map(), inputs: new Map(), listSizes: new Map() };

const COST_SPEC = 'https://specs.apollo.dev/cost/';

/** The names the supergraph's `@link` to the cost spec gives `@cost` and `@listSize`, if it links it. */
function costDirectiveNames(doc: DocumentNode): { cost: string; listSize: string } | null {
  const d = specLink(doc, COST_SPEC);
  if (!d) return null;
  // The spec's own directive is named after the link (`as`, else `cost`); the others are
  // prefixed with it unless imported, possibly under another name.
  const prefix = stringArg(d, 'as') ?? 'cost';
  const names = { cost: prefix, listSize: `${prefix}__listSize` };
  const imports = d.arguments?.find((a) => a.name.value === 'import')?.value;
  if (imports?.kind === Kind.LIST) {
    for (const item of imports.values) {
      let name: string | undefined;
      let as: string | undefined;
      if (item.kind === Kind.STRING) name = item.value;
      else if (item.kind === Kind.OBJECT) {
        for (const f of item.fields) {
          if (f.value.kind !== Kind.STRING) continue;
          if (f.name.value === 'name') name = f.value.value;
          if (f.name.value === 'as') as = f.value.value;
        }
      }
      const local = (as ?? name)?.replace(/^@/, '');
      if (name === '@listSize' && local) names.listSize = local;
      if (name === '@cost' && local) names.cost = local;
    }
  }
  return names;
}

const intArg = (d: ConstDirectiveNode, name: string): number | null => {
  const v = d.arguments?.find((a) => a.name.value === name)?.value;
  return v?.kind === Kind.INT ? Number(v.value) : null;
};

const stringListArg = (d: ConstDirectiveNode, name: string): string[] => {
  const v = d.arguments?.find((a) => a.name.value === name)?.value;
  if (v?.kind === Kind.STRING) return [v.value];
  if (v?.kind !== Kind.LIST) return [];
  return v.values.flatMap((x) => (x.kind === Kind.STRING ? [x.value] : []));
};

const boolArg = (d: ConstDirectiveNode, name: string, fallback: boolean): boolean => {
  const v = d.arguments?.find((a) => a.name.value === name)?.value;
  return v?.kind === Kind.BOOLEAN ? v.value : fallback;
};

/** Reads every `@cost` and `@listSize` of a (parsed) supergraph. */
export function readCostDirectives(doc: DocumentNode): CostDirectives {
  const names = costDirectiveNames(doc);
  if (!names) return NO_COST_DIRECTIVES;
  const types = new Map<string, number>();
  const fields = new Map<string, number>();
  const inputs = new Map<string, number>();
  const listSizes = new Map<string, ListSize>();
  const weightOf = (directives: readonly ConstDirectiveNode[] | undefined) => {
    const d = directives?.find((x) => x.name.value === names.cost);
    return d ? intArg(d, 'weight') : null;
  };
  for (const def of doc.definitions) {
    if (!isTypeDefinitionNode(def) && !isTypeExtensionNode(def)) continue;
    const typeName = def.name.value;
    const typeWeight = weightOf(def.directives);
    if (typeWeight !== null) types.set(typeName, typeWeight);
    if (def.kind === Kind.ENUM_TYPE_DEFINITION || def.kind === Kind.ENUM_TYPE_EXTENSION) continue;
    if (!('fields' in def) || !def.fields) continue;
    for (const field of def.fields) {
      const coordinate = `${typeName}.${field.name.value}`;
      const weight = weightOf(field.directives);
      if (field.kind === Kind.INPUT_VALUE_DEFINITION) {
        if (weight !== null) inputs.set(coordinate, weight);
        continue;
      }
      if (weight !== null) fields.set(coordinate, weight);
      for (const arg of field.arguments ?? []) {
        const argWeight = weightOf(arg.directives);
        if (argWeight !== null) inputs.set(`${coordinate}(${arg.name.value}:)`, argWeight);
      }
      const listSize = field.directives?.find((x) => x.name.value === names.listSize);
      if (listSize) {
        listSizes.set(coordinate, {
          assumedSize: intArg(listSize, 'assumedSize'),
          slicingArguments: stringListArg(listSize, 'slicingArguments'),
          sizedFields: stringListArg(listSize, 'sizedFields'),
          // The directive's own default (the cost spec's definition).
          requireOneSlicingArgument: boolArg(listSize, 'requireOneSlicingArgument', true),
        });
      }
    }
  }
  return { types, fields, inputs, listSizes };
}

/** `readCostDirectives` of a supergraph's SDL text (what the registry stores), parsed here. */
export const costDirectivesOf = (supergraphSdl: string): CostDirectives => readCostDirectives(parse(supergraphSdl));

// ── Analysis ──

export type Variables = Readonly<Record<string, unknown>> | undefined;

export interface Analysis {
  depth: number;
  /** The estimated cost with these variables. */
  cost: (variables: Variables) => number;
}

/**
 * Analyses one operation of a validated document against the API schema and the supergraph's
 * cost directives (the compiling is ./cost-compiler.ts). Throws nothing for documents that passed
 * validation; fields or types it cannot find (which validation would have refused) count as free
 * and shallow.
 */
export function analyse(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  directives: CostDirectives,
  defaultListSize: number,
): Analysis {
  const root = schema.getRootType(operation.operation);
  if (!root) return { depth: 0, cost: () => 0 };
  const body = new CostCompiler(schema, document, directives, defaultListSize).selections(operation.selectionSet, root, null);
  const total = sum([makeConstant(operation.operation === OperationTypeNode.MUTATION ? 10 : 0), body.cost]);

  const defaults = new Map<string, ValueNode>();
  for (const v of operation.variableDefinitions ?? []) if (v.defaultValue) defaults.set(v.variable.name.value, v.defaultValue);
  const depth = capped(body.depth);
  if (isConstant.has(total)) {
    const fixed = capped(total(() => undefined, new Map()));
    return { depth, cost: () => fixed };
  }
  return {
    depth,
    cost(variables) {
      const resolve: Resolve = (name) => {
        if (variables && Object.hasOwn(variables, name)) return variables[name];
        const d = defaults.get(name);
        return d ? valueOf(d, () => undefined) : undefined;
      };
      return capped(total(resolve, new Map()));
    },
  };
}
