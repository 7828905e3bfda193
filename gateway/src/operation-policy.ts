import type { ApolloServerPlugin } from '@apollo/server';
import { TOKEN_REQUIRED, unauthenticated, type Caller, type Logger } from '@halo/kit';
import { parse, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { needsCaller, readAuthPolicy, toTransportError, type AuthPolicy } from './auth';
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

interface Checked extends Analysis {
  schema: GraphQLSchema;
  needsCaller: boolean;
}

/**
 * Every operation, however it came (POST, GET, one of a batch, a persisted query), is checked
 * here after validation and before the gateway plans it or calls any subgraph: depth (HTTP 400
 * MAX_DEPTH_LIMIT), estimated cost (HTTP 400 COST_ESTIMATED_TOO_EXPENSIVE), then `@authenticated`
 * (HTTP 401 UNAUTHENTICATED for an anonymous caller).
 *
 * The supergraph's policy is read at every (re)load and kept per API schema, so a request is
 * always judged by the supergraph it was validated against, even while a new one is loading. The
 * analysis of a document is kept with the document itself: Apollo caches validated documents by
 * query hash, so the same query text is analysed once; only the cost is evaluated per request,
 * from the variables, as a few additions and multiplications.
 */
export function operationPolicyPlugin<C extends { caller: Caller | null }>(limits: OperationLimits, logger: Logger): ApolloServerPlugin<C> {
  const supergraphs = new WeakMap<GraphQLSchema, SupergraphPolicy>();
  const analyses = new WeakMap<DocumentNode, Map<string, Checked>>();

  const check = (schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): Checked => {
    let byOperation = analyses.get(document);
    if (!byOperation) analyses.set(document, (byOperation = new Map()));
    const key = operation.name?.value ?? '';
    const known = byOperation.get(key);
    if (known?.schema === schema) return known;
    const policy = supergraphs.get(schema);
    // Never judge an operation without its supergraph's rules (fail closed).
    if (!policy) throw new Error('no supergraph policy for this schema');
    const analysis = analyse(schema, document, operation, policy.cost, limits.defaultListSize);
    const checked: Checked = {
      schema,
      depth: analysis.depth,
      cost: analysis.cost,
      needsCaller: needsCaller(schema, document, operation, policy.auth),
    };
    byOperation.set(key, checked);
    logger.debug({ operationName: operation.name?.value, depth: checked.depth }, 'operation analysed');
    return checked;
  };

  return {
    async serverWillStart() {
      return {
        schemaDidLoadOrUpdate({ apiSchema, coreSupergraphSdl }) {
          if (coreSupergraphSdl === undefined) return;
          const doc = parse(coreSupergraphSdl);
          supergraphs.set(apiSchema, { auth: readAuthPolicy(doc), cost: readCostDirectives(doc) });
        },
      };
    },
    async requestDidStart() {
      return {
        async didResolveOperation({ schema, document, operation, request, contextValue }) {
          if (!operation) return;
          const checked = check(schema, document, operation);
          if (checked.depth > limits.maxDepth) throw depthLimitError(checked.depth, limits.maxDepth);
          const cost = checked.cost(request.variables);
          if (cost > limits.maxCost) throw costLimitError(cost, limits.maxCost);
          if (checked.needsCaller && !contextValue.caller) throw toTransportError(unauthenticated(TOKEN_REQUIRED));
        },
      };
    },
  };
}
