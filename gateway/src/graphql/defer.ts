import {
  extendSchema,
  Kind,
  OperationTypeNode,
  parse,
  print,
  valueFromASTUntyped,
  visit,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type InlineFragmentNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type VariableDefinitionNode,
} from 'graphql';
import { sha256 } from './persisted';

/**
 * `@defer` (the incremental delivery RFC, as Apollo Client and the Router speak it): added to the
 * API schema the gateway serves, so every transport validates it. `@stream` is not: the executor
 * cannot answer a list item by item (docs/api/graphql.md "Deferred fragments").
 */
export const DEFER_DIRECTIVE_SDL = 'directive @defer(if: Boolean! = true, label: String) on FRAGMENT_SPREAD | INLINE_FRAGMENT';

/** More deferred fragments than this in one operation: it is answered whole, in one part. */
export const MAX_DEFERRED_FRAGMENTS = 16;

/** The field a selection set emptied by removing its deferred fragments keeps (removed from every answer). */
export const PLACEHOLDER_KEY = '__halo_deferred';

/**
 * One deferred fragment: the operation that answers it alone — only the fields on the way to it
 * (with their arguments), then its own selections — and where its data goes in the answer.
 */
export interface DeferredPart {
  label: string | undefined;
  /** The response keys from the root to the object the fragment's fields belong to. */
  path: readonly string[];
  /** The deferred fragment this one is inside (its part comes first), or null: inside the primary. */
  parent: number | null;
  document: DocumentNode;
  query: string;
  /** The query's SHA-256: the key of its query plan in the executor's cache. */
  queryHash: string;
  /** It selects the placeholder somewhere (a selection set emptied by deferral): removed from its answer. */
  placeholder: boolean;
}

/** One operation a deferred operation runs: its document, text and hash. */
export type PartOperation = Pick<DeferredPart, 'document' | 'query' | 'queryHash' | 'placeholder'>;

export interface DeferPlan {
  /** The operation without its deferred fragments: the first part. */
  primary: PartOperation;
  parts: DeferredPart[];
}

/** A step on the way to a deferred fragment: a field (by response key) or a fragment (by node). */
type Step = { field: FieldNode } | { fragment: InlineFragmentNode };

interface Found {
  node: InlineFragmentNode;
  label: string | undefined;
  steps: Step[];
  parent: number | null;
}

const isDefer = (d: DirectiveNode) => d.name.value === 'defer';
const withoutDefer = (directives: readonly DirectiveNode[] | undefined) => directives?.filter((d) => !isDefer(d));

/** Plans already made, per operation node (documents are cached by text), by the `@defer` arguments' variable values. */
const plans = new WeakMap<OperationDefinitionNode, { variables: string[]; byValues: Map<string, DeferPlan | null> }>();
/** Distinct variable values kept per operation (a label from a variable could otherwise grow it without end). */
const MAX_PLANS_PER_OPERATION = 16;

/**
 * How an operation with `@defer` is answered in parts, or null when nothing in it is deferred
 * (no `@defer`, every one `if: false`, a mutation or subscription — answered whole — or more than
 * MAX_DEFERRED_FRAGMENTS). Named fragments are inlined first, so each deferred fragment has one
 * place in the tree. `document` has been validated; `variables` coerced. Made once per operation
 * and values of the variables `@defer`'s arguments name: the same request asks for the same
 * objects, whose analyses and query plans the policy and the executor have cached.
 */
export function planDefer(
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | undefined,
): DeferPlan | null {
  if (operation.operation !== OperationTypeNode.QUERY) return null;
  let known = plans.get(operation);
  if (!known) plans.set(operation, (known = { variables: deferVariables(document), byValues: new Map() }));
  // A variable not sent (its default applies) is told apart from one sent as null.
  const key = JSON.stringify(known.variables.map((name) => (variables && name in variables ? [variables[name]] : 0)));
  if (known.byValues.has(key)) return known.byValues.get(key)!;
  const plan = makePlan(document, operation, variables);
  if (known.byValues.size < MAX_PLANS_PER_OPERATION) known.byValues.set(key, plan);
  return plan;
}

/** The variables any `@defer` argument of the document names (its `if` and `label`). */
function deferVariables(document: DocumentNode): string[] {
  const names = new Set<string>();
  visit(document, {
    Directive(directive) {
      if (!isDefer(directive)) return false;
      visit(directive, {
        Variable(v) {
          names.add(v.name.value);
        },
      });
      return false;
    },
  });
  return [...names].sort();
}

function makePlan(
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | undefined,
): DeferPlan | null {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const inlined = inlineFragments(operation, fragments);
  const found: Found[] = [];
  collect(inlined.selectionSet, [], null, found, variables ?? {}, operation.variableDefinitions ?? []);
  if (found.length === 0 || found.length > MAX_DEFERRED_FRAGMENTS) return null;
  const deferred = new Set(found.map((f) => f.node));
  const primary = single(operation, { ...inlined, selectionSet: strip(inlined.selectionSet, deferred)! });
  const parts = found.map((f): DeferredPart => {
    const others = new Set([...deferred].filter((n) => n !== f.node));
    const own: InlineFragmentNode = {
      ...f.node,
      directives: withoutDefer(f.node.directives),
      selectionSet: strip(f.node.selectionSet, others)!,
    };
    const doc = single(operation, { ...inlined, selectionSet: along(f.steps, own) });
    return { label: f.label, path: f.steps.flatMap((s) => ('field' in s ? [responseKey(s.field)] : [])), parent: f.parent, ...doc };
  });
  return { primary, parts };
}

/**
 * The plan of a query sent with `@defer` to a client that takes parts, and what answering it
 * spends from the caller's cost budget: the sum of the estimated costs of the operations that run
 * (each fragment's fetches the fields on the way to it again), where the operation as sent was
 * judged against the limits. `costOf` estimates one operation (the policy's check: each is a part
 * of the one that passed). Null: answered whole (nothing deferred, or a part the policy refuses).
 */
export function deferredQuery(
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | undefined,
  costOf: (document: DocumentNode, operation: OperationDefinitionNode) => number,
): { plan: DeferPlan; spend: number } | null {
  const plan = planDefer(document, operation, variables);
  if (!plan) return null;
  try {
    let spend = 0;
    for (const part of [plan.primary, ...plan.parts])
      spend += costOf(part.document, part.document.definitions[0] as OperationDefinitionNode);
    return { plan, spend };
  } catch {
    // A part the policy refuses cannot be part of an operation it let through; answered whole, then.
    return null;
  }
}

const responseKey = (field: FieldNode) => field.alias?.value ?? field.name.value;

/** The operation with every fragment spread replaced by an inline fragment of the same type and directives. */
function inlineFragments(operation: OperationDefinitionNode, fragments: Map<string, FragmentDefinitionNode>): OperationDefinitionNode {
  return visit(operation, {
    FragmentSpread(spread) {
      const fragment = fragments.get(spread.name.value);
      if (!fragment) return undefined;
      const inline: InlineFragmentNode = {
        kind: Kind.INLINE_FRAGMENT,
        typeCondition: fragment.typeCondition,
        directives: spread.directives ?? [],
        selectionSet: inlineFragments({ ...placeholderOperation, selectionSet: fragment.selectionSet }, fragments).selectionSet,
      };
      return inline;
    },
  });
}

const placeholderOperation: OperationDefinitionNode = {
  kind: Kind.OPERATION_DEFINITION,
  operation: OperationTypeNode.QUERY,
  selectionSet: { kind: Kind.SELECTION_SET, selections: [] },
};

/** Whether `@defer` is on (its `if`: literal, variable, or the default true). */
function active(
  directive: DirectiveNode,
  variables: Readonly<Record<string, unknown>>,
  definitions: readonly VariableDefinitionNode[],
): boolean {
  const arg = directive.arguments?.find((a) => a.name.value === 'if');
  if (!arg) return true;
  if (arg.value.kind === Kind.VARIABLE) {
    const name = arg.value.name.value;
    if (name in variables) return variables[name] !== false;
    const def = definitions.find((d) => d.variable.name.value === name)?.defaultValue;
    return def ? valueFromASTUntyped(def) !== false : true;
  }
  return valueFromASTUntyped(arg.value, variables) !== false;
}

function labelOf(directive: DirectiveNode, variables: Readonly<Record<string, unknown>>): string | undefined {
  const arg = directive.arguments?.find((a) => a.name.value === 'label');
  if (!arg) return undefined;
  const value: unknown = valueFromASTUntyped(arg.value, variables);
  return typeof value === 'string' ? value : undefined;
}

/** Every active deferred fragment under `set`, in document order, with the way to it. */
function collect(
  set: SelectionSetNode,
  steps: Step[],
  parent: number | null,
  found: Found[],
  variables: Readonly<Record<string, unknown>>,
  definitions: readonly VariableDefinitionNode[],
): void {
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) {
      if (s.selectionSet) collect(s.selectionSet, [...steps, { field: s }], parent, found, variables, definitions);
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      const defer = s.directives?.find(isDefer);
      if (defer && active(defer, variables, definitions)) {
        found.push({ node: s, label: labelOf(defer, variables), steps, parent });
        collect(s.selectionSet, [...steps, { fragment: s }], found.length - 1, found, variables, definitions);
      } else collect(s.selectionSet, [...steps, { fragment: s }], parent, found, variables, definitions);
    }
  }
}

/** `set` without the fragments in `removed` and without any `@defer`; a set left empty keeps a placeholder. */
function strip(set: SelectionSetNode, removed: ReadonlySet<InlineFragmentNode>): SelectionSetNode | undefined {
  const selections: SelectionNode[] = [];
  for (const s of set.selections) {
    if (s.kind === Kind.INLINE_FRAGMENT) {
      if (removed.has(s)) continue;
      selections.push({ ...s, directives: withoutDefer(s.directives), selectionSet: strip(s.selectionSet, removed)! });
    } else if (s.kind === Kind.FIELD && s.selectionSet) selections.push({ ...s, selectionSet: strip(s.selectionSet, removed) });
    else selections.push(s);
  }
  if (selections.length === 0) selections.push(PLACEHOLDER);
  return { ...set, selections };
}

const PLACEHOLDER: FieldNode = {
  kind: Kind.FIELD,
  alias: { kind: Kind.NAME, value: PLACEHOLDER_KEY },
  name: { kind: Kind.NAME, value: '__typename' },
};

/** Only the way to the fragment: each field and fragment on it keeps its arguments and directives, and one selection. */
function along(steps: readonly Step[], own: InlineFragmentNode): SelectionSetNode {
  let inner: SelectionNode = own;
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i]!;
    const selectionSet: SelectionSetNode = { kind: Kind.SELECTION_SET, selections: [inner] };
    inner =
      'field' in step
        ? { ...step.field, selectionSet }
        : { ...step.fragment, directives: withoutDefer(step.fragment.directives), selectionSet };
  }
  return { kind: Kind.SELECTION_SET, selections: [inner] };
}

/** A document of one operation, with only the variables it uses (an unused one would not validate). */
function single(original: OperationDefinitionNode, operation: OperationDefinitionNode): PartOperation {
  const used = new Set<string>();
  visit(operation.selectionSet, {
    Variable(v) {
      used.add(v.name.value);
    },
  });
  const variableDefinitions = original.variableDefinitions?.filter((d) => used.has(d.variable.name.value));
  const document: DocumentNode = { kind: Kind.DOCUMENT, definitions: [{ ...operation, variableDefinitions }] };
  const query = print(document);
  return { document, query, queryHash: sha256(query), placeholder: query.includes(PLACEHOLDER_KEY) };
}

/**
 * The document with every `@defer` removed (its fragments then simply not deferred): what a
 * subscription is forwarded as, since the subgraph that serves it does not know the directive and
 * each event is one answer anyway.
 */
export function withoutDeferDirectives(document: DocumentNode): DocumentNode {
  return visit(document, {
    Directive(directive) {
      return isDefer(directive) ? null : undefined;
    },
  });
}

/** Removes the placeholder fields `strip` added, in place. */
export function removePlaceholders(value: unknown): void {
  if (Array.isArray(value)) {
    for (const v of value) removePlaceholders(v);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const record = value as Record<string, unknown>;
  if (PLACEHOLDER_KEY in record) delete record[PLACEHOLDER_KEY];
  for (const key in record) removePlaceholders(record[key]);
}

/** One part's answer at its place: the object at `path` (each list entered at every index). */
export interface IncrementalItem {
  data: Record<string, unknown> | null;
  path: (string | number)[];
  label?: string;
  errors?: readonly unknown[];
}

/**
 * The deferred part's items from its own answer: the object reached by `path` (a list entered at
 * every index, nulls skipped — their place was nulled in the primary part already).
 */
export function itemsAt(data: unknown, path: readonly string[]): IncrementalItem[] {
  const items: IncrementalItem[] = [];
  const walk = (value: unknown, i: number, at: (string | number)[]): void => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) {
      value.forEach((v, j) => walk(v, i, [...at, j]));
      return;
    }
    if (typeof value !== 'object') return;
    if (i === path.length) {
      items.push({ data: value as Record<string, unknown>, path: at });
      return;
    }
    const key = path[i]!;
    walk((value as Record<string, unknown>)[key], i + 1, [...at, key]);
  };
  walk(data, 0, []);
  return items;
}

const withDefer = new WeakMap<GraphQLSchema, GraphQLSchema>();

/**
 * The API schema with `@defer` declared (the gateway's own leaves it out), made once per schema so
 * that every path sees the same object.
 */
export function withDeferDirective(schema: GraphQLSchema): GraphQLSchema {
  if (schema.getDirective('defer')) return schema;
  let extended = withDefer.get(schema);
  if (!extended) withDefer.set(schema, (extended = extendSchema(schema, parse(DEFER_DIRECTIVE_SDL), { assumeValidSDL: true })));
  return extended;
}

/**
 * Whether the client's `Accept` asks for parts: `multipart/mixed` with `deferSpec=20220824`
 * (Apollo Client, the Router), or with no spec named (GraphiQL's and graphql-tools' HTTP
 * executor, which read the same format). Another spec (graphql-js 17's newer `incrementalSpec`)
 * is not this format: such a client gets the whole answer.
 */
export function acceptsIncremental(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('multipart/mixed')) return false;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    if (type !== 'multipart/mixed') return false;
    const specs = params.map((p) => p.replace(/\s+/g, '')).filter((p) => p.startsWith('deferspec=') || p.startsWith('incrementalspec='));
    return specs.length === 0 || specs.every((p) => p === 'deferspec=20220824');
  });
}
