import {
  getNamedType,
  GraphQLError,
  isLeafType,
  Kind,
  print,
  visit,
  type ConstDirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type VariableDefinitionNode,
} from 'graphql';

/**
 * Federated subscriptions: how a subscription is split between the subgraph that owns its root
 * field and the subgraphs that own the rest of what it selects.
 *
 * `@apollo/gateway` plans queries and mutations only. For a subscription the gateway forwards the
 * operation to the subgraph that owns the root field (chat's `newMessage`) with every part that
 * subgraph cannot resolve replaced by the entity's `__typename` and key (`author { __typename id }`);
 * for each event it then fetches those parts from the subgraph that owns them through `_entities`
 * (`... on User { name }` from content) and merges them into the event — the model Hive Gateway
 * and Apollo Router follow. One level of entity fetch is supported: a part must be resolvable by
 * one subgraph whole (content owns all of `User`), which covers every type Halo has; anything
 * else is refused up front with a clear error rather than answered partly.
 *
 * Ownership comes from the supergraph's `@join__type` / `@join__field` directives (the join spec):
 * a field with `@join__field(graph: X)` is resolved by the graphs named there (not `external`),
 * any other field by every graph that defines its type.
 */

interface TypeJoin {
  /** graph → keys that graph resolves the type by (empty when it only references it). */
  graphs: Map<string, { keys: string[]; resolvable: boolean }>;
  /** field → graphs resolving it; absent: every graph of the type. */
  fields: Map<string, Set<string>>;
}

/** What the supergraph says about who resolves what (graphs by their service name). */
export interface JoinMap {
  types: Map<string, TypeJoin>;
  /**
   * Coordinates (`Type.field`, or `Type` for a whole type) whose value depends on who asks:
   * tagged `@tag(name: "private")` in their subgraph (content's `User.email`).
   */
  private: Set<string>;
}

/** The `@tag` name that marks a field or type whose value depends on the caller. */
export const PRIVATE_TAG = 'private';

const argOf = (d: ConstDirectiveNode, name: string) => d.arguments?.find((a) => a.name.value === name)?.value;
const stringOf = (d: ConstDirectiveNode, name: string): string | undefined => {
  const v = argOf(d, name);
  return v?.kind === Kind.STRING ? v.value : undefined;
};
const boolOf = (d: ConstDirectiveNode, name: string, fallback: boolean): boolean => {
  const v = argOf(d, name);
  return v?.kind === Kind.BOOLEAN ? v.value : fallback;
};
const enumOf = (d: ConstDirectiveNode, name: string): string | undefined => {
  const v = argOf(d, name);
  return v?.kind === Kind.ENUM ? v.value : undefined;
};

/** Reads the join directives of a (parsed) supergraph. */
export function readJoinMap(supergraph: DocumentNode): JoinMap {
  const graphNames = new Map<string, string>();
  for (const def of supergraph.definitions) {
    if (def.kind !== Kind.ENUM_TYPE_DEFINITION || def.name.value !== 'join__Graph') continue;
    for (const value of def.values ?? []) {
      const d = value.directives?.find((x) => x.name.value === 'join__graph');
      graphNames.set(value.name.value, (d && stringOf(d, 'name')) ?? value.name.value.toLowerCase());
    }
  }
  const graph = (d: ConstDirectiveNode) => {
    const e = enumOf(d, 'graph');
    return e === undefined ? undefined : (graphNames.get(e) ?? e.toLowerCase());
  };
  const types = new Map<string, TypeJoin>();
  const privateCoordinates = new Set<string>();
  const tagged = (ds: readonly ConstDirectiveNode[] | undefined) =>
    ds?.some((d) => d.name.value === 'tag' && stringOf(d, 'name') === PRIVATE_TAG);
  for (const def of supergraph.definitions) {
    if (def.kind !== Kind.OBJECT_TYPE_DEFINITION && def.kind !== Kind.INTERFACE_TYPE_DEFINITION) continue;
    if (tagged(def.directives)) privateCoordinates.add(def.name.value);
    for (const field of def.fields ?? []) if (tagged(field.directives)) privateCoordinates.add(`${def.name.value}.${field.name.value}`);
    const join: TypeJoin = { graphs: new Map(), fields: new Map() };
    for (const d of def.directives ?? []) {
      if (d.name.value !== 'join__type') continue;
      const g = graph(d);
      if (!g) continue;
      const entry = join.graphs.get(g) ?? { keys: [], resolvable: false };
      const key = stringOf(d, 'key');
      if (key !== undefined) entry.keys.push(key);
      entry.resolvable ||= key !== undefined && boolOf(d, 'resolvable', true);
      join.graphs.set(g, entry);
    }
    for (const field of def.fields ?? []) {
      const joins = field.directives?.filter((d) => d.name.value === 'join__field') ?? [];
      if (joins.length === 0) continue;
      const graphs = new Set<string>();
      for (const d of joins) {
        const g = graph(d);
        if (g && !boolOf(d, 'external', false)) graphs.add(g);
      }
      // `@join__field` with no graph (a field of the type in every graph) keeps the default.
      if (graphs.size > 0) join.fields.set(field.name.value, graphs);
    }
    types.set(def.name.value, join);
  }
  return { types, private: privateCoordinates };
}

function resolves(join: JoinMap, typeName: string, field: string, graph: string): boolean {
  if (field === '__typename') return true;
  const type = join.types.get(typeName);
  if (!type) return false;
  const graphs = type.fields.get(field);
  return graphs ? graphs.has(graph) : type.graphs.has(graph);
}

/** Where an entity fetch puts its answers: response keys from `data` down (the root field's first). */
export interface EntityFetch {
  path: string[];
  /** The entity type and the subgraph that resolves the part (by service name). */
  typeName: string;
  graph: string;
  keyFields: string[];
  /** `query($representations…) { _entities(…) { ... on T { <the client's selection> } } }`. */
  query: string;
  /** The operation's variables this query uses. */
  variableNames: string[];
  /**
   * Nothing in the part depends on the caller (no private or `@authenticated` field): one fetch,
   * made without credentials, serves every subscriber of an event. Otherwise each caller's own.
   */
  shared: boolean;
}

/** Coordinates (`Type.field`, `Type`) that need the caller's own credentials. */
export interface CallerDependent {
  has(coordinate: string): boolean;
}

export interface SubscriptionPlan {
  /** The subgraph that owns the root field (by service name). */
  graph: string;
  /** The operation sent to it. */
  query: string;
  operationName: string | undefined;
  /** The root field's response key. */
  rootKey: string;
  fetches: EntityFetch[];
  /**
   * Set when nothing the subscription selects depends on the caller beyond its root field (no
   * private or `@authenticated` field or type, every entity fetch shared): whether subscribers
   * then share one upstream subscription is the root field's rule (./sharing.ts).
   */
  sharing: PlanSharing | null;
}

export interface PlanSharing {
  /** `Subscription.<field>`. */
  rootCoordinate: string;
  rootField: FieldNode;
  rootDefinition: GraphQLField<unknown, unknown>;
  /** The client's document as printed (whitespace and comments normalised away). */
  document: string;
}

export const REPRESENTATIONS_VAR = 'haloRepresentations';

const field = (name: string): FieldNode => ({ kind: Kind.FIELD, name: { kind: Kind.NAME, value: name } });

/** Fragment spreads replaced by inline fragments (validation has refused cycles already). */
function inlineFragments(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>): SelectionSetNode {
  return {
    ...set,
    selections: set.selections.map((s): SelectionNode => {
      if (s.kind === Kind.FRAGMENT_SPREAD) {
        const f = fragments.get(s.name.value)!;
        return {
          kind: Kind.INLINE_FRAGMENT,
          typeCondition: f.typeCondition,
          ...(s.directives ? { directives: s.directives } : {}),
          selectionSet: inlineFragments(f.selectionSet, fragments),
        };
      }
      return s.selectionSet ? { ...s, selectionSet: inlineFragments(s.selectionSet, fragments) } : s;
    }),
  };
}

/** A part of the selection the graph cannot resolve (thrown up to the nearest entity). */
// Thrown as a signal inside the planner (caught by `instanceof Unresolvable` to plan an entity
// fetch instead), not an Error: no stack is captured on a path taken once per unresolvable field.
class Unresolvable {
  constructor(readonly what: string) {}
}

function unsupported(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'SUBSCRIPTION_SELECTION_UNSUPPORTED' } });
}

class Planner {
  readonly fetches: EntityFetch[] = [];
  /** While checking a part (or the whole selection): every coordinate it selects. */
  seen: Set<string> | null = null;
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly join: JoinMap,
    private readonly variables: readonly VariableDefinitionNode[],
    private readonly callerDependent: CallerDependent,
  ) {}

  /** The selection as `graph` can resolve it; with `allowFetch`, foreign parts become entity fetches. */
  split(set: SelectionSetNode, parent: GraphQLCompositeType, graph: string, path: string[], allowFetch: boolean): SelectionSetNode {
    const selections: SelectionNode[] = [];
    for (const s of set.selections) {
      if (s.kind === Kind.FRAGMENT_SPREAD) throw new Error('fragments are inlined before planning');
      if (s.kind === Kind.INLINE_FRAGMENT) {
        const type = s.typeCondition ? (this.schema.getType(s.typeCondition.name.value) as GraphQLCompositeType) : parent;
        selections.push({ ...s, selectionSet: this.split(s.selectionSet, type, graph, path, allowFetch) });
        continue;
      }
      const name = s.name.value;
      if (name === '__typename') {
        selections.push(s);
        continue;
      }
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- a planning signal, see Unresolvable
      if (!resolves(this.join, parent.name, name, graph)) throw new Unresolvable(`${parent.name}.${name}`);
      this.seen?.add(`${parent.name}.${name}`);
      const def = 'getFields' in parent ? parent.getFields()[name] : undefined;
      const type = def ? getNamedType(def.type) : undefined;
      if (type) this.seen?.add(type.name);
      if (!s.selectionSet || !type || isLeafType(type)) {
        selections.push(s);
        continue;
      }
      const key = s.alias?.value ?? name;
      try {
        selections.push({
          ...s,
          selectionSet: this.split(s.selectionSet, type as GraphQLCompositeType, graph, [...path, key], allowFetch),
        });
      } catch (err) {
        if (!(err instanceof Unresolvable) || !allowFetch) throw err;
        selections.push({ ...s, selectionSet: this.entityFetch(s.selectionSet, type as GraphQLCompositeType, graph, [...path, key], err) });
      }
    }
    return { ...set, selections };
  }

  /** `part` of an entity goes to the one subgraph that resolves it whole; the origin sends the key. */
  private entityFetch(
    part: SelectionSetNode,
    type: GraphQLCompositeType,
    origin: string,
    path: string[],
    cause: Unresolvable,
  ): SelectionSetNode {
    const join = this.join.types.get(type.name);
    for (const [graph, entry] of join?.graphs ?? []) {
      if (graph === origin || !entry.resolvable) continue;
      const keyFields = entry.keys
        .map((k) => k.trim().split(/\s+/))
        .find((fields) => fields.every((f) => /^\w+$/.test(f) && resolves(this.join, type.name, f, origin)));
      if (!keyFields) continue;
      const outer = this.seen;
      const seen = (this.seen = new Set([type.name]));
      try {
        this.split(part, type, graph, [], false);
      } catch (err) {
        if (err instanceof Unresolvable) continue;
        throw err;
      } finally {
        this.seen = outer;
      }
      const shared = ![...seen].some((c) => this.callerDependent.has(c) || this.join.private.has(c));
      const used = new Set<string>();
      visit(part, { Variable: (v) => void used.add(v.name.value) });
      const defs = this.variables.filter((d) => used.has(d.variable.name.value));
      const selection = print(part);
      const vars = [`$${REPRESENTATIONS_VAR}: [_Any!]!`, ...defs.map((d) => print(d))].join(', ');
      this.fetches.push({
        path,
        typeName: type.name,
        graph,
        keyFields,
        query: `query(${vars}) { _entities(representations: $${REPRESENTATIONS_VAR}) { ... on ${type.name} ${selection} } }`,
        variableNames: [...used],
        shared,
      });
      return { kind: Kind.SELECTION_SET, selections: [field('__typename'), ...keyFields.map(field)] };
    }
    throw unsupported(`Subscriptions cannot select ${cause.what} here: no one subgraph resolves this part of ${type.name} whole`);
  }
}

/**
 * Plans a validated subscription against the supergraph. Throws a GraphQLError
 * (SUBSCRIPTION_SELECTION_UNSUPPORTED) for a selection it cannot split.
 */
export function planSubscription(
  schema: GraphQLSchema,
  join: JoinMap,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  /** `@authenticated` fields and types (the supergraph's auth policy). */
  callerDependent: CallerDependent = new Set(),
): SubscriptionPlan {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const root = schema.getSubscriptionType();
  if (!root) throw unsupported('This graph has no subscriptions');
  const selectionSet = inlineFragments(operation.selectionSet, fragments);
  // Validation allows exactly one root field in a subscription (possibly inside inline fragments).
  let rootField: FieldNode | undefined;
  visit(selectionSet, {
    Field(node) {
      if (node.name.value !== '__typename') rootField = node;
      return false;
    },
  });
  if (!rootField) throw unsupported('A subscription selects one root field');
  const owners = join.types.get(root.name)?.fields.get(rootField.name.value) ?? new Set(join.types.get(root.name)?.graphs.keys());
  const [graph] = owners;
  if (graph === undefined || owners.size !== 1) throw unsupported(`No single subgraph owns Subscription.${rootField.name.value}`);
  const planner = new Planner(schema, join, operation.variableDefinitions ?? [], callerDependent);
  const seen = (planner.seen = new Set<string>());
  const forwarded = planner.split(selectionSet, root, graph, [], true);
  const rootCoordinate = `${root.name}.${rootField.name.value}`;
  const rootDefinition = root.getFields()[rootField.name.value];
  // The root field's own access rules are checked per caller at admission; what it selects is not.
  const callerIndependent =
    planner.fetches.every((f) => f.shared) &&
    ![...seen].some((c) => c !== rootCoordinate && (callerDependent.has(c) || join.private.has(c)));
  // Variables only the fetched parts use are not declared upstream (unused ones fail validation).
  const used = new Set<string>();
  visit(forwarded, { Variable: (v) => void used.add(v.name.value) });
  const variableDefinitions = operation.variableDefinitions?.filter((d) => used.has(d.variable.name.value));
  const op: OperationDefinitionNode = { ...operation, selectionSet: forwarded, ...(variableDefinitions ? { variableDefinitions } : {}) };
  return {
    graph,
    query: print({ kind: Kind.DOCUMENT, definitions: [op] }),
    operationName: operation.name?.value,
    rootKey: rootField.alias?.value ?? rootField.name.value,
    fetches: planner.fetches,
    sharing: callerIndependent && rootDefinition ? { rootCoordinate, rootField, rootDefinition, document: print(document) } : null,
  };
}
