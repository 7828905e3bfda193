import {
  getNamedType,
  isCompositeType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

/**
 * The compiler behind `analyse` (./cost.ts): a selection set becomes its depth and a cost that
 * is a small function of the request's variables, constant parts folded at compile time.
 */

/** A field's `@listSize`. */
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

/** The variables of one request, with the operation's defaults for those not given. */
export type Resolve = (name: string) => unknown;

/** A cost that may depend on the request's variables; `memo` spans one evaluation. */
export type Cost = (vars: Resolve, memo: Map<unknown, number>) => number;

const constant =
  (n: number): Cost =>
  () =>
    n;
export const isConstant = new WeakSet<Cost>();
export const makeConstant = (n: number): Cost => {
  const c = constant(n);
  isConstant.add(c);
  return c;
};
export const ZERO = makeConstant(0);

/** Sums costs, folding the constant ones (most of a document) at compile time. */
export function sum(parts: Cost[]): Cost {
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
export function valueOf(node: ValueNode, vars: Resolve): unknown {
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
export function skippedLiterally(node: FieldNode): boolean {
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
export const capped = (n: number) => (Number.isFinite(n) ? Math.min(n, CAP) : CAP);

/** Depth and cost of a selection (compiled once; the cost evaluated per request). */
export interface Compiled {
  depth: number;
  cost: Cost;
}

const FREE: Compiled = { depth: 0, cost: ZERO };

/**
 * Compiles the selections of one document against the API schema and the supergraph's cost
 * directives. Fields or types it cannot find (which validation would have refused) count as free
 * and shallow.
 */
export class CostCompiler {
  private readonly fragments = new Map<string, FragmentDefinitionNode>();
  /** Compiled fragments, per sizing context (null: none), so each is compiled once per context. */
  private readonly compiled = new Map<Map<string, Cost> | null, Map<string, Compiled>>();
  /** Fragments being compiled right now: meeting one again is a cycle. */
  private readonly open = new Set<string>();

  constructor(
    private readonly schema: GraphQLSchema,
    document: DocumentNode,
    private readonly directives: CostDirectives,
    private readonly defaultListSize: number,
  ) {
    for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) this.fragments.set(def.name.value, def);
  }

  /** Depth and cost of a selection set on `parent`; `sized` maps child fields to a size. */
  selections(set: SelectionSetNode, parent: GraphQLCompositeType, sized: Map<string, Cost> | null): Compiled {
    let depth = 0;
    const parts: Cost[] = [];
    for (const sel of set.selections) {
      let r: Compiled;
      if (sel.kind === Kind.FIELD) r = this.field(sel, parent, sized);
      else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const on = sel.typeCondition ? this.schema.getType(sel.typeCondition.name.value) : parent;
        if (!on || !isCompositeType(on)) continue;
        r = this.selections(sel.selectionSet, on, sized);
      } else r = this.fragment(sel.name.value, sized);
      depth = Math.max(depth, r.depth);
      parts.push(r.cost);
    }
    return { depth, cost: sum(parts) };
  }

  /** A named fragment: compiled once (per sizing context), evaluated once per request. */
  private fragment(name: string, sized: Map<string, Cost> | null): Compiled {
    const def = this.fragments.get(name);
    if (!def) return FREE;
    let done = this.compiled.get(sized);
    if (!done) this.compiled.set(sized, (done = new Map<string, Compiled>()));
    const known = done.get(name);
    if (known) return known;
    if (this.open.has(name)) return { depth: Infinity, cost: makeConstant(Infinity) };
    const on = this.schema.getType(def.typeCondition.name.value);
    if (!on || !isCompositeType(on)) return FREE;
    this.open.add(name);
    const r = this.selections(def.selectionSet, on, sized);
    this.open.delete(name);
    const result = { depth: r.depth, cost: oncePerRequest(r.cost) };
    done.set(name, result);
    return result;
  }

  private field(node: FieldNode, parent: GraphQLCompositeType, sized: Map<string, Cost> | null): Compiled {
    const name = node.name.value;
    if (name.startsWith('__') || skippedLiterally(node)) return FREE;
    if (!isObjectType(parent) && !isInterfaceType(parent)) return FREE;
    const def = parent.getFields()[name];
    if (!def) return FREE;
    const coordinate = `${parent.name}.${name}`;
    const named = getNamedType(def.type);
    const listSize = this.directives.listSizes.get(coordinate);
    const count = this.countOf(def.type, sized?.get(name), listSize, node);
    // Its children's sizes, when its @listSize names them (connections).
    let childSized: Map<string, Cost> | null = null;
    if (listSize && listSize.sizedFields.length > 0) {
      const size = sizeFrom(listSize, node, this.defaultListSize);
      childSized = new Map(listSize.sizedFields.map((f) => [f, size]));
    }
    const own = this.directives.fields.get(coordinate) ?? this.directives.types.get(named.name) ?? (isCompositeType(named) ? 1 : 0);
    const children = node.selectionSet && isCompositeType(named) ? this.selections(node.selectionSet, named, childSized) : FREE;
    const args = argumentsCost(node, parent, def, this.directives);
    const perItem = sum([makeConstant(own), children.cost]);
    let cost: Cost;
    if (isConstant.has(count) && isConstant.has(perItem)) {
      cost = makeConstant(count(() => undefined, new Map()) * perItem(() => undefined, new Map()));
    } else {
      cost = (vars, memo) => count(vars, memo) * perItem(vars, memo);
    }
    return { depth: 1 + children.depth, cost: sum([cost, args]) };
  }

  /** How many of a field: 1, the size a parent's @listSize gave it, its own @listSize, or the default. */
  private countOf(type: GraphQLOutputType, fromParent: Cost | undefined, listSize: ListSize | undefined, node: FieldNode): Cost {
    if (!isList(type)) return makeConstant(1);
    if (fromParent) return fromParent;
    if (listSize && listSize.sizedFields.length === 0) return sizeFrom(listSize, node, this.defaultListSize);
    return makeConstant(this.defaultListSize);
  }
}

/** A fragment's variable cost, evaluated once per request however often it is spread. */
function oncePerRequest(inner: Cost): Cost {
  if (isConstant.has(inner)) return inner;
  const token = {};
  return (vars, memo) => {
    let v = memo.get(token);
    if (v === undefined) memo.set(token, (v = inner(vars, memo)));
    return v;
  };
}

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

function argumentsCost(
  field: FieldNode,
  parent: GraphQLCompositeType,
  def: GraphQLField<unknown, unknown>,
  directives: CostDirectives,
): Cost {
  // Only weighted arguments and input objects cost anything.
  if (!field.arguments?.length || (directives.inputs.size === 0 && !def.args.some((a) => isInputObjectType(getNamedType(a.type))))) {
    return ZERO;
  }
  const parts: Cost[] = [];
  for (const arg of field.arguments) {
    const argDef = def.args.find((a) => a.name === arg.name.value);
    if (!argDef) continue;
    const weight = directives.inputs.get(`${parent.name}.${def.name}(${arg.name.value}:)`) ?? null;
    const score = (value: unknown) => inputCost(value, argDef.type, weight, directives);
    if (usesVariables(arg.value)) parts.push((vars) => score(valueOf(arg.value, vars)));
    else parts.push(makeConstant(score(valueOf(arg.value, () => undefined))));
  }
  return sum(parts);
}

/** An argument's cost: its weight, an input object 1 plus its fields, a list its items. */
function inputCost(value: unknown, type: GraphQLInputType, weight: number | null, directives: CostDirectives): number {
  if (value === null || value === undefined) return 0;
  const named = getNamedType(type);
  if (Array.isArray(value)) {
    // The list's own weight, plus each item priced as the argument is (as Apollo Router does).
    let total = weight ?? 0;
    for (const item of value) total += inputCost(item, type, weight, directives);
    return total;
  }
  if (isInputObjectType(named) && typeof value === 'object') {
    const inputFields = named.getFields();
    let total = weight ?? 1;
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      const f = inputFields[key];
      if (f) total += inputCost(v, f.type, directives.inputs.get(`${named.name}.${key}`) ?? null, directives);
    }
    return total;
  }
  return weight ?? directives.types.get(named.name) ?? 0;
}
