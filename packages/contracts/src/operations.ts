import {
  getNamedType,
  GraphQLError,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { analyse, NO_COST_DIRECTIVES, type CostDirectives } from './cost';
import { skippedLiterally } from './cost-compiler';
import { operationCoordinates } from './usage';

/**
 * How deep a client's operation may nest: the gateway's default `GRAPHQL_MAX_DEPTH`
 * (gateway/src/config.ts), which refuses a deeper one with MAX_DEPTH_LIMIT.
 */
export const MAX_OPERATION_DEPTH = 7;

/**
 * The largest estimated cost of a client's operation: the gateway's default `GRAPHQL_MAX_COST`,
 * which refuses a costlier one with COST_ESTIMATED_TOO_EXPENSIVE.
 */
export const MAX_OPERATION_COST = 1000;

/** Items assumed for a list nothing else sizes: the gateway's default `GRAPHQL_DEFAULT_LIST_SIZE`. */
export const DEFAULT_LIST_SIZE = 10;

/**
 * The depth of one operation, measured as the gateway's limit measures it (the reference:
 * ./cost.ts `analyse` and ./cost-compiler.ts `CostCompiler`, whose depth half this is):
 * the longest chain of nested fields, root fields being depth 1; fragments and inline fragments
 * add no depth of their own; `__typename` and introspection fields, fields a literal `@skip(if:
 * true)` / `@include(if: false)` removes, and fields the schema does not know count for nothing;
 * a fragment cycle is infinitely deep.
 */
export function operationDepth(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): number {
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  const measured = new Map<string, number>();
  const open = new Set<string>();

  const fragment = (name: string): number => {
    const known = measured.get(name);
    if (known !== undefined) return known;
    if (open.has(name)) return Infinity;
    const def = fragments.get(name);
    const on = def ? schema.getType(def.typeCondition.name.value) : undefined;
    if (!def || !on || !isCompositeType(on)) return 0;
    open.add(name);
    const depth = selections(def.selectionSet, on);
    open.delete(name);
    measured.set(name, depth);
    return depth;
  };
  const field = (node: FieldNode, parent: GraphQLCompositeType): number => {
    const name = node.name.value;
    if (name.startsWith('__') || skippedLiterally(node)) return 0;
    if (!isObjectType(parent) && !isInterfaceType(parent)) return 0;
    const def = parent.getFields()[name];
    if (!def) return 0;
    const named = getNamedType(def.type);
    return 1 + (node.selectionSet && isCompositeType(named) ? selections(node.selectionSet, named) : 0);
  };
  function selections(set: SelectionSetNode, parent: GraphQLCompositeType): number {
    let depth = 0;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) depth = Math.max(depth, field(sel, parent));
      else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const on = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        if (on && isCompositeType(on)) depth = Math.max(depth, selections(sel.selectionSet, on));
      } else depth = Math.max(depth, fragment(sel.name.value));
    }
    return depth;
  }
  return selections(operation.selectionSet, root);
}

/** A client's operation the API schema accepts: its name ('' when anonymous) and the coordinates it uses. */
export type CheckedOperation = { ok: true; name: string; coordinates: string[] } | { ok: false; name: string; reason: string };

/** At most this many validation errors are named in a reason (the rest are counted). */
const MAX_ERRORS_NAMED = 3;

/** What `checkOperation` holds an operation to; each defaults to the gateway's default. */
export interface OperationLimits {
  /** Deepest nesting (`MAX_OPERATION_DEPTH`). */
  maxDepth?: number;
  /** Largest estimated cost (`MAX_OPERATION_COST`). */
  maxCost?: number;
  /** The supergraph's `@cost`/`@listSize` (`readCostDirectives`); without them, the spec's default weights. */
  costDirectives?: CostDirectives;
  /** Items assumed for a list nothing else sizes (`DEFAULT_LIST_SIZE`). */
  defaultListSize?: number;
}

/**
 * Whether `body`, a client's persisted operation, would run against the API schema: it parses,
 * holds exactly one operation (fragments allowed), passes graphql-js validation, is at most
 * `maxDepth` deep and costs at most `maxCost` (both as the gateway measures them). The cost is the
 * gateway's `analyse` with no variables sent, as the gateway prices a request that sends none: a
 * variable is its declared default, else absent (a slicing argument then falls back to the
 * `@listSize` assumedSize, else the default list size). Accepted, it comes with the schema
 * coordinates it uses (`operationCoordinates`, what a check matches a change against).
 */
export function checkOperation(schema: GraphQLSchema, body: string, limits: OperationLimits = {}): CheckedOperation {
  const { maxDepth = MAX_OPERATION_DEPTH, maxCost = MAX_OPERATION_COST } = limits;
  let document: DocumentNode;
  try {
    document = parse(body);
  } catch (err) {
    if (!(err instanceof GraphQLError)) throw err;
    return { ok: false, name: '', reason: `does not parse: ${err.message}` };
  }
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const name = operations.length === 1 ? (operations[0]!.name?.value ?? '') : '';
  if (operations.length !== 1) {
    return { ok: false, name, reason: `holds ${operations.length} operations: a document holds exactly one (and any fragments)` };
  }
  const operation = operations[0]!;
  const errors = validate(schema, document);
  if (errors.length > 0) {
    const named = errors.slice(0, MAX_ERRORS_NAMED).map((e) => e.message);
    if (errors.length > MAX_ERRORS_NAMED) named.push(`and ${errors.length - MAX_ERRORS_NAMED} more`);
    return { ok: false, name, reason: `invalid against the current API schema: ${named.join('; ')}` };
  }
  const depth = operationDepth(schema, document, operation);
  if (depth > maxDepth) {
    const measured = Number.isFinite(depth) ? String(depth) : 'unbounded (a fragment cycle)';
    return { ok: false, name, reason: `depth ${measured} exceeds the limit of ${maxDepth}` };
  }
  const directives = limits.costDirectives ?? NO_COST_DIRECTIVES;
  const cost = analyse(schema, document, operation, directives, limits.defaultListSize ?? DEFAULT_LIST_SIZE).cost(undefined);
  if (cost > maxCost) return { ok: false, name, reason: `estimated cost ${cost} exceeds the limit of ${maxCost}` };
  return { ok: true, name, coordinates: operationCoordinates(schema, document) };
}
