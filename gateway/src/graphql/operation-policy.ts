import type { ApolloServerPlugin } from '@apollo/server';
import { TOKEN_REQUIRED, type Caller } from '@halo/kit/auth';
import { unauthenticated } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import { parse, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { needsCaller, readAuthPolicy, toTransportError, type AuthPolicy } from '../auth';
import { analyse, costLimitError, depthLimitError, readCostDirectives, type Analysis, type CostDirectives } from './limits';

/** What the supergraph says about operations, beyond what the API schema keeps. */
export interface SupergraphPolicy {
  auth: AuthPolicy;
  cost: CostDirectives;
}

export interface OperationLimits {
  maxDepth: number;
  maxCost: number;
  defaultListSize: number;
}

/** The supergraph the gateway serves now: its API schema, its parsed SDL and its policy. */
export interface LoadedSupergraph {
  apiSchema: GraphQLSchema;
  supergraph: DocumentNode;
  policy: SupergraphPolicy;
}

interface Checked extends Analysis {
  schema: GraphQLSchema;
  needsCaller: boolean;
}

/**
 * Every operation, however it came (POST, GET, one of a batch, a persisted query, a WebSocket
 * subscription), is checked here after validation and before the gateway plans it or calls any
 * subgraph: depth (MAX_DEPTH_LIMIT), estimated cost (COST_ESTIMATED_TOO_EXPENSIVE), then
 * `@authenticated` (UNAUTHENTICATED for an anonymous caller). Over HTTP those are 400/401.
 *
 * The supergraph's policy is read at every (re)load and kept per API schema, so a request is
 * always judged by the supergraph it was validated against, even while a new one is loading. The
 * analysis of a document is kept with the document itself: Apollo caches validated documents by
 * query hash, so the same query text is analysed once; only the cost is evaluated per request,
 * from the variables, as a few additions and multiplications.
 */
export class OperationPolicy {
  private readonly supergraphs = new WeakMap<GraphQLSchema, SupergraphPolicy>();
  private readonly analyses = new WeakMap<DocumentNode, Map<string, Checked>>();
  private latest: LoadedSupergraph | null = null;
  private readonly listeners = new Set<(loaded: LoadedSupergraph) => void>();

  constructor(
    private readonly limits: OperationLimits,
    private readonly logger: Logger,
  ) {}

  /** A supergraph was (re)loaded: its policy judges operations validated against `apiSchema`. */
  load(apiSchema: GraphQLSchema, supergraphSdl: string): void {
    const supergraph = parse(supergraphSdl);
    const policy = { auth: readAuthPolicy(supergraph), cost: readCostDirectives(supergraph) };
    this.supergraphs.set(apiSchema, policy);
    this.latest = { apiSchema, supergraph, policy };
    for (const listener of this.listeners) listener(this.latest);
  }

  /** The supergraph loaded last (null before the first load). */
  current(): LoadedSupergraph | null {
    return this.latest;
  }

  /** Called after every (re)load, e.g. to close the subscriptions of the supergraph before. */
  onLoad(listener: (loaded: LoadedSupergraph) => void): void {
    this.listeners.add(listener);
  }

  /** Throws the GraphQLError that refuses the operation; returns its estimated cost when it may run. */
  check(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown> | undefined,
    caller: Caller | null,
  ): number {
    const checked = this.analyse(schema, document, operation);
    if (checked.depth > this.limits.maxDepth) throw depthLimitError(checked.depth, this.limits.maxDepth);
    const cost = checked.cost(variables);
    if (cost > this.limits.maxCost) throw costLimitError(cost, this.limits.maxCost);
    if (checked.needsCaller && !caller) throw toTransportError(unauthenticated(TOKEN_REQUIRED));
    return cost;
  }

  private analyse(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): Checked {
    let byOperation = this.analyses.get(document);
    if (!byOperation) this.analyses.set(document, (byOperation = new Map<string, Checked>()));
    const key = operation.name?.value ?? '';
    const known = byOperation.get(key);
    if (known?.schema === schema) return known;
    const policy = this.supergraphs.get(schema);
    // Never judge an operation without its supergraph's rules (fail closed).
    if (!policy) throw new Error('no supergraph policy for this schema');
    const analysis = analyse(schema, document, operation, policy.cost, this.limits.defaultListSize);
    const checked: Checked = {
      schema,
      depth: analysis.depth,
      cost: analysis.cost,
      needsCaller: needsCaller(schema, document, operation, policy.auth),
    };
    byOperation.set(key, checked);
    this.logger.debug({ operationName: operation.name?.value, depth: checked.depth }, 'operation analysed');
    return checked;
  }

  /**
   * The policy as an Apollo Server plugin (the HTTP transports). `spend`, when given, is handed
   * the cost of every operation that passed (the rate limits' cost budget): it throws to refuse.
   */
  plugin<C extends { caller: Caller | null; cost?: number | undefined }>(
    spend?: (cost: number, context: C) => Promise<void>,
  ): ApolloServerPlugin<C> {
    /* eslint-disable @typescript-eslint/require-await -- Apollo Server types every plugin hook as returning a
       promise; written async, a hook that throws rejects as Apollo expects. */
    return {
      serverWillStart: async () => ({
        schemaDidLoadOrUpdate: ({ apiSchema, coreSupergraphSdl }) => {
          if (coreSupergraphSdl !== undefined) this.load(apiSchema, coreSupergraphSdl);
        },
      }),
      requestDidStart: async () => ({
        didResolveOperation: async ({ schema, document, operation, request, contextValue, overallCachePolicy }) => {
          if (!operation) return;
          const cost = this.check(schema, document, operation, request.variables, contextValue.caller);
          await commitOperation(cost, contextValue, overallCachePolicy, spend);
        },
      }),
    };
    /* eslint-enable @typescript-eslint/require-await */
  }
}

/**
 * What an operation the policy let through commits to, on every path that executes it (Apollo
 * Server's plugin above, the lean path): its cost spent from the caller's budget (`spend` throws
 * the refusal), then its answer made private when a caller asked. Each subgraph sends the policy
 * its `@cacheControl` hints give; none can know the caller is authenticated, and such an answer
 * must never sit in a shared cache (docs/api/graphql.md).
 */
export async function commitOperation<C extends { caller: Caller | null; cost?: number | undefined }>(
  cost: number,
  context: C,
  cachePolicy: { restrict(hint: { scope: 'PRIVATE' }): void },
  spend?: (cost: number, context: C) => Promise<void>,
): Promise<void> {
  context.cost = cost;
  if (spend) await spend(cost, context);
  if (context.caller) cachePolicy.restrict({ scope: 'PRIVATE' });
}

/** `no-store`: what every answer says unless what answers earned a cache policy. */
export const NO_STORE = 'no-store';

/**
 * An answer's Cache-Control, on every HTTP path: an error status is never stored, whatever was
 * earned; otherwise the policy the answer earned (`max-age=…, public|private`), or `no-store`.
 */
export function cacheControlFor(status: number, earned: { maxAge: number; scope: string } | string | null | undefined): string {
  if (status >= 400 || !earned) return NO_STORE;
  return typeof earned === 'string' ? earned : `max-age=${earned.maxAge}, ${earned.scope.toLowerCase()}`;
}
