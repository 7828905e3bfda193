import {
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import {
  admitOperation,
  deferredQuery,
  withoutDeferDirectives,
  type Documents,
  type LoadedSupergraph,
  type OperationPolicy,
  type RegisteredOperations,
} from '../graphql';
import type { RateLimits } from '../ratelimit';
import { error, type ClientHeaders, type Connection, type OperationContext, type SubscriptionContext } from './context';
import { SubscriptionPlanner } from './planner';

/** What one operation sent over a socket or an event stream becomes: its execution arguments, or the errors to answer. */
export type Admitted =
  | readonly GraphQLError[]
  | {
      schema: GraphQLSchema;
      document: DocumentNode;
      operationName: string | undefined;
      variableValues: Record<string, unknown>;
      contextValue: OperationContext | SubscriptionContext;
      /** The operation's estimated cost (what the observers record). */
      cost: number;
      /** What the rate limits spend: its cost, or for a query answered in parts (`@defer`) the sum of theirs. */
      spend: number;
    };

export type UsageRecorder = (
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  headers: ClientHeaders,
  variables: Readonly<Record<string, unknown>>,
  cost: number,
) => void;

export interface SubscribePayload {
  query?: unknown;
  operationName?: string | null | undefined;
  variables?: Record<string, unknown> | null | undefined;
  /** A registered operation's id (`persistedQuery.sha256Hash`) may stand for its text. */
  extensions?: unknown;
  documentId?: unknown;
  doc_id?: unknown;
}

export interface Admission {
  documents: Documents;
  planner: SubscriptionPlanner;
  policy: OperationPolicy;
  recordUsage: UsageRecorder | undefined;
  /** Registered operations (PERSISTED_OPERATIONS audit or enforce), subscriptions included; null when off. */
  registered: RegisteredOperations | null;
}

/**
 * One operation sent over a socket, judged by the same code as HTTP before anything is forwarded:
 * parsed and validated (token and alias caps), its variables coerced, its depth, cost and
 * `@authenticated` fields checked; a subscription is planned too.
 */
export function admitSocketOperation(loaded: LoadedSupergraph, connection: Connection, sent: SubscribePayload, a: Admission): Admitted {
  let payload = sent;
  if (a.registered) {
    // As HTTP operations are judged (graphql/http.ts), with what the connection declared of its client.
    const h = connection.client as Readonly<Record<string, string | undefined>>;
    const resolved = a.registered.resolve(
      payload,
      a.registered.clientOf((name) => h[name]),
    );
    if ('refused' in resolved) return [resolved.refused];
    payload = resolved.op as SubscribePayload;
  }
  if (typeof payload.query !== 'string' || payload.query === '') return [error('A query is required', 'BAD_REQUEST')];
  const operationName = payload.operationName ?? undefined;
  // The steps every transport runs (graphql/operation-steps.ts), against the same caches.
  const admitted = admitOperation(a.documents, a.policy, loaded.apiSchema, { ...payload, query: payload.query }, connection.caller);
  if ('step' in admitted) return admitted.errors;
  const { document, operation, cost, variables: inputs } = admitted;
  const base = { schema: loaded.apiSchema, document, operationName, variableValues: inputs, cost, spend: cost };
  if (operation.operation !== OperationTypeNode.SUBSCRIPTION) {
    // In parts, the budget pays for every operation that runs (graphql/defer.ts `deferredQuery`).
    const deferred = payload.query.includes('@defer')
      ? deferredQuery(document, operation, inputs, (d, o) => a.policy.check(loaded.apiSchema, d, o, inputs, connection.caller))
      : null;
    return {
      ...base,
      spend: deferred?.spend ?? cost,
      contextValue: {
        kind: 'operation',
        connection,
        request: { query: payload.query, variables: inputs, operationName },
        defer: deferred?.plan ?? null,
      },
    };
  }
  try {
    // Each event is one answer: a deferred fragment is simply not deferred (the subgraph does not know @defer).
    const forwarded = payload.query.includes('@defer') ? withoutDeferDirectives(document) : document;
    const op = forwarded === document ? operation : getOperationAST(forwarded, operationName)!;
    const plan = a.planner.planFor(loaded, forwarded, op);
    a.recordUsage?.(loaded.apiSchema, document, operation, connection.client, inputs, cost);
    return { ...base, contextValue: { kind: 'subscription', connection, plan, variables: inputs, document: forwarded, operation: op } };
  } catch (err) {
    if (err instanceof GraphQLError) return [err];
    throw err;
  }
}

/**
 * The admission both transports share (WebSocket `subscribe`, an SSE request): the checks of
 * `admitSocketOperation` against the supergraph being served, then the rate limits (a request counted,
 * its cost spent) once the operation passed them. The planner is the one `policy.onLoad` re-judges.
 */
export function createAdmission(opts: {
  policy: OperationPolicy;
  documents: Documents;
  recordUsage?: UsageRecorder | undefined;
  rateLimits?: RateLimits | null | undefined;
  registered?: RegisteredOperations | null | undefined;
}) {
  const { policy, rateLimits, documents } = opts;
  const planner = new SubscriptionPlanner(policy, documents);
  const admit = async (connection: Connection, payload: SubscribePayload): Promise<Admitted> => {
    const loaded = policy.current();
    if (!loaded) return [error('The gateway is starting', 'UNAVAILABLE')];
    const admitted = admitSocketOperation(loaded, connection, payload, {
      documents,
      planner,
      policy,
      recordUsage: opts.recordUsage,
      registered: opts.registered ?? null,
    });
    if ('spend' in admitted && rateLimits && connection.limitKey !== undefined) {
      const refused = await rateLimits.charge(connection.limitKey, connection.caller !== null, admitted.spend);
      if (refused) return [refused];
    }
    return admitted;
  };
  return { planner, admit };
}
