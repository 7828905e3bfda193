import {
  getNamedType,
  GraphQLError,
  isCompositeType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isTypeDefinitionNode,
  isTypeExtensionNode,
  Kind,
  type ConstDirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

/**
 * Depth and cost of an operation, before anything is planned or sent to a subgraph.
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

export interface ListSize {
  assumedSize: number | null;
  slicingArguments: string[];
  sizedFields: string[];
  requireOneSlicingArgument: boolean;
}

/** `@cost`/`@listSize` of a supergraph, by schema coordinate. */
export interface CostDirectives {
  /** `Type` → weight (objects, scalars, enums). */
  types: ReadonlyMap<string, number>;
  /** `Type.field` → weight. */
  fields: ReadonlyMap<string, number>;
  /** `Type.field(arg:)` and `Input.field` → weight. */
  inputs: ReadonlyMap<string, number>;
  /** `Type.field` → its `@listSize`. */
  listSizes: ReadonlyMap<string, ListSize>;
}

export const NO_COST_DIRECTIVES: CostDirectives = { types: new Map(), fields: new Map(), inputs: new Map(), listSizes: new Map() };

const COST_SPEC = 'https://specs.apollo.dev/cost/';

const stringArg = (d: ConstDirectiveNode, name: string): string | undefined => {
  const v = d.arguments?.find((a) => a.name.value === name)?.value;
  return v?.kind === Kind.STRING ? v.value : undefined;
};

/** The names the supergraph's `@link` to the cost spec gives `@cost` and `@listSize`, if it links it. */
function costDirectiveNames(doc: DocumentNode): { cost: string; listSize: string } | null {
  for (const def of doc.definitions) {
    if (def.kind !== Kind.SCHEMA_DEFINITION && def.kind !== Kind.SCHEMA_EXTENSION) continue;
    for (const d of def.directives ?? []) {
      if (d.name.value !== 'link') continue;
      const url = stringArg(d, 'url');
      if (!url?.startsWith(COST_SPEC)) continue;
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
  }
  return null;
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

// ── Analysis ──

export type Variables = Readonly<Record<string, unknown>> | undefined;

/** The variables of one request, with the operation's defaults for those not given. */
type Resolve = (name: string) => unknown;

/** A cost that may depend on the request's variables; `memo` spans one evaluation. */
type Cost = (vars: Resolve, memo: Map<unknown, number>) => number;

export interface Analysis {
  depth: number;
  /** The estimated cost with these variables. */
  cost(variables: Variables): number;
}

const constant = (n: number): Cost => () => n;
const isConstant = new WeakSet<Cost>();
const makeConstant = (n: number): Cost => {
  const c = constant(n);
  isConstant.add(c);
  return c;
};
const ZERO = makeConstant(0);

/** Sums costs, folding the constant ones (most of a document) at compile time. */
function sum(parts: Cost[]): Cost {
  let fixed = 0;
  const dynamic: Cost[] = [];
  for (const p of parts) {
    if (isConstant.has(p)) fixed += p(() => undefined, new Map());
    else dynamic.push(p);
  }
  if (dynamic.length === 0) return makeConstant(fixed);
  return (vars, memo) => {
    let total = fixed;
    for (const d of dynamic) total += d(vars, memo);
    return total;
  };
}

/** A literal or variable argument value, as JSON. */
function valueOf(node: ValueNode, vars: Resolve): unknown {
  switch (node.kind) {
    case Kind.VARIABLE:
      return vars(node.name.value);
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.BOOLEAN:
      return node.value;
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((v) => valueOf(v, vars));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, valueOf(f.value, vars)]));
  }
}

const usesVariables = (node: ValueNode): boolean =>
  node.kind === Kind.VARIABLE ||
  (node.kind === Kind.LIST && node.values.some(usesVariables)) ||
  (node.kind === Kind.OBJECT && node.fields.some((f) => usesVariables(f.value)));

/** True for a field a literal `@skip(if: true)` or `@include(if: false)` removes. */
function skippedLiterally(node: FieldNode): boolean {
  for (const d of node.directives ?? []) {
    const cond = d.arguments?.find((a) => a.name.value === 'if')?.value;
    if (cond?.kind !== Kind.BOOLEAN) continue;
    if (d.name.value === 'skip' && cond.value) return true;
    if (d.name.value === 'include' && !cond.value) return true;
  }
  return false;
}

const isList = (type: GraphQLOutputType): boolean => isListType(isNonNullType(type) ? type.ofType : type);

/** How big an analysis may say a number is: beyond this, "too much" is all that matters. */
const CAP = Number.MAX_SAFE_INTEGER;
const capped = (n: number) => (Number.isFinite(n) ? Math.min(n, CAP) : CAP);

/**
 * Analyses one operation of a validated document against the API schema and the supergraph's
 * cost directives. Throws nothing for documents that passed validation; fields or types it cannot
 * find (which validation would have refused) count as free and shallow.
 */
export function analyse(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  directives: CostDirectives,
  defaultListSize: number,
): Analysis {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

  /** Compiled fragments, per sizing context (null: none), so each is compiled once per context. */
  const compiled = new Map<Map<string, Cost> | null, Map<string, { depth: number; cost: Cost }>>();
  /** Fragments being compiled right now: meeting one again is a cycle. */
  const open = new Set<string>();

  /** A list size from `@listSize`, given the field's arguments. */
  function sizeFrom(listSize: ListSize, field: FieldNode, fallback: number): Cost {
    const args = new Map((field.arguments ?? []).map((a) => [a.name.value, a.value]));
    const slicing = listSize.slicingArguments.map((path) => {
      const [head, ...rest] = path.split('.');
      return { node: args.get(head!), rest };
    });
    const fromArgs = (vars: Resolve): number | null => {
      let best: number | null = null;
      let given = 0;
      for (const { node, rest } of slicing) {
        if (!node) continue;
        let value = valueOf(node, vars);
        for (const key of rest) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
        if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) continue;
        given++;
        best = best === null ? value : Math.max(best, value);
      }
      // The spec asks for exactly one slicing argument then; with none (or several) the
      // assumed size stands in, never less than what was given.
      if (listSize.requireOneSlicingArgument && given !== 1) return best === null ? null : Math.max(best, listSize.assumedSize ?? fallback);
      return best;
    };
    const orAssumed = listSize.assumedSize ?? fallback;
    if (!slicing.some((s) => s.node && usesVariables(s.node))) return makeConstant(fromArgs(() => undefined) ?? orAssumed);
    return (vars) => fromArgs(vars) ?? orAssumed;
  }

  function argumentsCost(field: FieldNode, parent: GraphQLCompositeType, def: GraphQLField<unknown, unknown>): Cost {
    // Only weighted arguments and input objects cost anything.
    if (!field.arguments?.length || (directives.inputs.size === 0 && !def.args.some((a) => isInputObjectType(getNamedType(a.type))))) {
      return ZERO;
    }
    const parts: Cost[] = [];
    for (const arg of field.arguments) {
      const argDef = def.args.find((a) => a.name === arg.name.value);
      if (!argDef) continue;
      const weight = directives.inputs.get(`${parent.name}.${def.name}(${arg.name.value}:)`) ?? null;
      const score = (value: unknown) => inputCost(value, argDef.type, weight);
      if (usesVariables(arg.value)) parts.push((vars) => score(valueOf(arg.value, vars)));
      else parts.push(makeConstant(score(valueOf(arg.value, () => undefined))));
    }
    return sum(parts);
  }

  /** An argument's cost: its weight, an input object 1 plus its fields, a list its items. */
  function inputCost(value: unknown, type: GraphQLInputType, weight: number | null): number {
    if (value === null || value === undefined) return 0;
    const named = getNamedType(type);
    if (Array.isArray(value)) {
      // The list's own weight, plus each item priced as the argument is (as Apollo Router does).
      let total = weight ?? 0;
      for (const item of value) total += inputCost(item, type, weight);
      return total;
    }
    if (isInputObjectType(named) && typeof value === 'object') {
      const inputFields = named.getFields();
      let total = weight ?? 1;
      for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
        const f = inputFields[key];
        if (f) total += inputCost(v, f.type, directives.inputs.get(`${named.name}.${key}`) ?? null);
      }
      return total;
    }
    return weight ?? directives.types.get(named.name) ?? 0;
  }

  /** Depth and cost of a selection set on `parent`; `sized` maps child fields to a size. */
  function selections(set: SelectionSetNode, parent: GraphQLCompositeType, sized: Map<string, Cost> | null): { depth: number; cost: Cost } {
    let depth = 0;
    const parts: Cost[] = [];
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const r = fieldOf(sel, parent, sized);
        depth = Math.max(depth, r.depth);
        parts.push(r.cost);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const on = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        if (!on || !isCompositeType(on)) continue;
        const r = selections(sel.selectionSet, on, sized);
        depth = Math.max(depth, r.depth);
        parts.push(r.cost);
      } else {
        const r = fragment(sel.name.value, sized);
        depth = Math.max(depth, r.depth);
        parts.push(r.cost);
      }
    }
    return { depth, cost: sum(parts) };
  }

  /** A named fragment: compiled once (per sizing context), evaluated once per request. */
  function fragment(name: string, sized: Map<string, Cost> | null): { depth: number; cost: Cost } {
    const def = fragments.get(name);
    if (!def) return { depth: 0, cost: ZERO };
    let done = compiled.get(sized);
    if (!done) compiled.set(sized, (done = new Map()));
    const known = done.get(name);
    if (known) return known;
    if (open.has(name)) return { depth: Infinity, cost: makeConstant(Infinity) };
    const on = schema.getType(def.typeCondition.name.value);
    if (!on || !isCompositeType(on)) return { depth: 0, cost: ZERO };
    open.add(name);
    const r = selections(def.selectionSet, on, sized);
    open.delete(name);
    let cost = r.cost;
    if (!isConstant.has(cost)) {
      const inner = cost;
      const token = {};
      cost = (vars, memo) => {
        let v = memo.get(token);
        if (v === undefined) memo.set(token, (v = inner(vars, memo)));
        return v;
      };
    }
    const result = { depth: r.depth, cost };
    done.set(name, result);
    return result;
  }

  function fieldOf(node: FieldNode, parent: GraphQLCompositeType, sized: Map<string, Cost> | null): { depth: number; cost: Cost } {
    const name = node.name.value;
    if (name.startsWith('__') || skippedLiterally(node)) return { depth: 0, cost: ZERO };
    if (!isObjectType(parent) && !isInterfaceType(parent)) return { depth: 0, cost: ZERO };
    const def = parent.getFields()[name];
    if (!def) return { depth: 0, cost: ZERO };
    const coordinate = `${parent.name}.${name}`;
    const named = getNamedType(def.type);
    const listSize = directives.listSizes.get(coordinate);

    // How many of it: 1, the size a parent's @listSize gave it, its own @listSize, or the default.
    let count: Cost = makeConstant(1);
    if (isList(def.type)) {
      const fromParent = sized?.get(name);
      if (fromParent) count = fromParent;
      else if (listSize && listSize.sizedFields.length === 0) count = sizeFrom(listSize, node, defaultListSize);
      else count = makeConstant(defaultListSize);
    }
    // Its children's sizes, when its @listSize names them (connections).
    let childSized: Map<string, Cost> | null = null;
    if (listSize && listSize.sizedFields.length > 0) {
      const size = sizeFrom(listSize, node, defaultListSize);
      childSized = new Map(listSize.sizedFields.map((f) => [f, size]));
    }

    const own = directives.fields.get(coordinate) ?? directives.types.get(named.name) ?? (isCompositeType(named) ? 1 : 0);
    const children =
      node.selectionSet && isCompositeType(named) ? selections(node.selectionSet, named, childSized) : { depth: 0, cost: ZERO };
    const args = argumentsCost(node, parent, def);
    const perItem = sum([makeConstant(own), children.cost]);
    let cost: Cost;
    if (isConstant.has(count) && isConstant.has(perItem)) {
      cost = makeConstant(count(() => undefined, new Map()) * perItem(() => undefined, new Map()));
    } else {
      cost = (vars, memo) => count(vars, memo) * perItem(vars, memo);
    }
    return { depth: 1 + children.depth, cost: sum([cost, args]) };
  }

  const root =
    operation.operation === 'query'
      ? schema.getQueryType()
      : operation.operation === 'mutation'
        ? schema.getMutationType()
        : schema.getSubscriptionType();
  if (!root) return { depth: 0, cost: () => 0 };
  const body = selections(operation.selectionSet, root, null);
  const total = sum([makeConstant(operation.operation === 'mutation' ? 10 : 0), body.cost]);

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

// ── Errors ──

/** HTTP 400 MAX_DEPTH_LIMIT, with the measured depth and the limit (docs/api/graphql.md). */
export function depthLimitError(depth: number, maxDepth: number): GraphQLError {
  return new GraphQLError(`Query depth ${depth} exceeds the limit of ${maxDepth}`, {
    extensions: { code: 'MAX_DEPTH_LIMIT', depth, maxDepth, http: { status: 400 } },
  });
}

/** HTTP 400 COST_ESTIMATED_TOO_EXPENSIVE, with the estimated cost and the limit. */
export function costLimitError(cost: number, maxCost: number): GraphQLError {
  return new GraphQLError(`Query estimated cost ${cost} exceeds the limit of ${maxCost}`, {
    extensions: { code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost, maxCost, http: { status: 400 } },
  });
}
