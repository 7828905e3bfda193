import type { ApolloGateway, Experimental_DidResolveQueryPlanCallback, GraphQLDataSource } from '@apollo/gateway';
// The executor's own request kind (not re-exported by the package's index; it has no exports map).
import { GraphQLDataSourceRequestKind } from '@apollo/gateway/dist/datasources/types';
import { specLink } from '@halo/contracts/links';
import {
  BREAK,
  Kind,
  OperationTypeNode,
  parse,
  visit,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { GraphQLContext, Prefetched } from './context';
import type { LoadedSupergraph } from './operation-policy';

const INACCESSIBLE_SPEC = 'https://specs.apollo.dev/inaccessible/';

type QueryPlan = Parameters<Experimental_DidResolveQueryPlanCallback>[0]['queryPlan'];
type FetchNode = Extract<NonNullable<QueryPlan['node']>, { kind: 'Fetch' }>;
type GatewayRequestContext = Parameters<ApolloGateway['executor']>[0];
type Executed = Awaited<ReturnType<ApolloGateway['executor']>>;

/** One subgraph answers the operation exactly as the client asked it: the plan's only fetch. */
export interface DirectFetch {
  fetch: FetchNode;
  service: GraphQLDataSource;
}

/** Who answered a direct operation: the subgraph's data as it came, or the executor (./lean.ts's LeanAnswer). */
type DirectAnswer = 'direct' | 'lean';

/**
 * ADR 0019: the operations one subgraph answers whole, exactly as the client asked them.
 *
 * @apollo/gateway executes every plan the same way: it fetches, merges each answer into an empty
 * result, then walks the operation over that result to build the response anew (`computeResponse`:
 * drop what the planner added, null what the API schema does not allow, bubble nulls). For a plan
 * that is one fetch of the client's own selection from one subgraph, and an answer with data and no
 * errors, that walk gives back the answer it was given: the subgraph executed the same selection
 * against types the supergraph composed from its own (an output field's nullability can only be
 * looser in the supergraph, an enum's values only more), and nothing was added to be dropped.
 *
 * Which plans qualify is decided once per operation and supergraph, from the plan the executor
 * resolved for it (its `experimental_didResolveQueryPlan` hook), so the first request of every
 * operation runs the executor as before. A plan qualifies when:
 * - it is a single fetch of a query, with no `@requires` inputs, rewrites or context;
 * - the client's operation has no fragment and no directive, and the fetch selects the same fields
 *   under the same response names in the same order (the planner adds `__typename` under
 *   abstract types, so those differ);
 * - the supergraph links no `@inaccessible` (an API schema without some enum value the subgraph may
 *   still send).
 * Any answer that is not plain data (errors, `data: null`, a failed fetch) is handed, as fetched,
 * to the executor, which runs the same plan and shapes it exactly as before: nothing is fetched
 * twice (SubgraphDataSource takes the prefetched answer). e2e/graphql-lean.test.ts compares both
 * paths byte for byte.
 */
export class DirectPlans {
  /** Per operation (as parsed by the lean path): the decision, for the API schema it was made for. */
  private readonly decisions = new WeakMap<OperationDefinitionNode, { schema: GraphQLSchema; direct: DirectFetch | null }>();
  /** API schemas whose supergraph hides nothing from clients (no `@inaccessible`). */
  private readonly plain = new WeakSet<GraphQLSchema>();

  /** The policy's supergraph (re)loaded (OperationPolicy.onLoad). */
  readonly loaded = (loaded: LoadedSupergraph): void => {
    if (!specLink(loaded.supergraph, INACCESSIBLE_SPEC)) this.plain.add(loaded.apiSchema);
  };

  /** @apollo/gateway's `experimental_didResolveQueryPlan`: called on every execution, after planning. */
  readonly resolved: Experimental_DidResolveQueryPlanCallback = ({ queryPlan, serviceMap, operationContext }) => {
    const { schema, operation } = operationContext;
    if (this.decisions.get(operation)?.schema === schema) return;
    const direct = this.plain.has(schema) ? directFetch(queryPlan, operation, serviceMap) : null;
    this.decisions.set(operation, { schema, direct });
  };

  /** The direct fetch of this operation, if the executor found one for the API schema it is validated against. */
  lookup(schema: GraphQLSchema, operation: OperationDefinitionNode): DirectFetch | null {
    const decision = this.decisions.get(operation);
    return decision?.schema === schema ? decision.direct : null;
  }
}

/** The plan's only fetch when the subgraph's answer is the response (see DirectPlans), else null. */
export function directFetch(
  queryPlan: QueryPlan,
  operation: OperationDefinitionNode,
  serviceMap: Record<string, GraphQLDataSource | undefined>,
): DirectFetch | null {
  const fetch = queryPlan.node;
  if (fetch?.kind !== 'Fetch') return null;
  if (fetch.requires || fetch.inputRewrites?.length || fetch.outputRewrites?.length || fetch.contextRewrites?.length) return null;
  if (fetch.hasDefers || operation.operation !== OperationTypeNode.QUERY || fetch.operationKind !== OperationTypeNode.QUERY) return null;
  if (!plainSelections(operation)) return null;
  const service = serviceMap[fetch.serviceName];
  if (!service) return null;
  const document = fetch.operationDocumentNode ?? parse(fetch.operation);
  const fetched = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const asked = shapeOf(operation.selectionSet);
  if (!fetched || asked === null || shapeOf(fetched.selectionSet) !== asked) return null;
  return { fetch, service };
}

/**
 * What a selection set makes of a response: each field's response name, its field name and what
 * it selects, in order. Arguments are left out: they choose values, not the shape (and the planner
 * reprints literals, `"1"` as `1` for an ID). null: a fragment or a directive, which never matches.
 */
function shapeOf(selectionSet: SelectionSetNode): string | null {
  let shape = '{';
  for (const selection of selectionSet.selections) {
    if (selection.kind !== Kind.FIELD || selection.directives?.length) return null;
    shape += `${selection.alias?.value ?? ''}:${selection.name.value}`;
    if (selection.selectionSet) {
      const inner = shapeOf(selection.selectionSet);
      if (inner === null) return null;
      shape += inner;
    }
    shape += ' ';
  }
  return `${shape}}`;
}

/** No fragment (inline or spread) and no directive anywhere in the operation. */
function plainSelections(operation: OperationDefinitionNode): boolean {
  let plain = true;
  visit(operation, {
    enter(node) {
      if (node.kind === Kind.DIRECTIVE || node.kind === Kind.INLINE_FRAGMENT || node.kind === Kind.FRAGMENT_SPREAD) {
        plain = false;
        return BREAK;
      }
      return undefined;
    },
  });
  return plain;
}

/**
 * The direct fetch, sent as @apollo/gateway's executor sends a root fetch (the same request, the
 * variables the fetch uses, the same data source), then either the answer's data as the response,
 * or the executor run with the answer already in hand.
 */
export async function executeDirect(
  { fetch, service }: DirectFetch,
  requestContext: GatewayRequestContext,
  executor: ApolloGateway['executor'],
): Promise<{ executed: Executed; by: DirectAnswer }> {
  const provided = requestContext.request.variables;
  const variables: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const name of fetch.variableUsages ?? []) {
    if (provided && Object.hasOwn(provided, name) && provided[name] !== undefined) variables[name] = provided[name];
  }
  let prefetched: Prefetched;
  try {
    const response = await service.process({
      kind: GraphQLDataSourceRequestKind.INCOMING_OPERATION,
      request: { query: fetch.operation, variables, operationName: fetch.operationName },
      incomingRequestContext: requestContext,
      context: requestContext.context,
      document: fetch.operationDocumentNode,
      pathInIncomingRequest: [],
    });
    if (!response.errors && isPlainData(response.data)) {
      return { executed: { data: response.data } as ExecutionResult as Executed, by: 'direct' };
    }
    prefetched = { query: fetch.operation, response };
  } catch (error) {
    prefetched = { query: fetch.operation, error };
  }
  (requestContext.context as GraphQLContext).prefetched = prefetched;
  return { executed: await executor(requestContext), by: 'lean' };
}

const isPlainData = (data: unknown): data is Record<string, unknown> => typeof data === 'object' && data !== null && !Array.isArray(data);
