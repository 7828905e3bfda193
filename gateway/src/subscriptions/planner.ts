import { getVariableValues, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import type { Logger } from '@halo/kit/logging';
import type { Documents, LoadedSupergraph, OperationPolicy } from '../graphql';
import { error, type SubscriptionContext } from './context';
import { planSubscription, readJoinMap, type JoinMap, type SubscriptionPlan } from './plan';
import type { Channel } from './shared-upstream';

/**
 * Subscription plans, per supergraph: made once per document and operation, however many
 * subscribe with it, and judged again when a new supergraph loads.
 */
export class SubscriptionPlanner {
  private joins: { loaded: LoadedSupergraph; join: JoinMap } | null = null;
  private readonly plans = new WeakMap<DocumentNode, Map<string, SubscriptionPlan>>();

  constructor(
    private readonly policy: OperationPolicy,
    private readonly documents: Documents,
  ) {}

  planFor(loaded: LoadedSupergraph, document: DocumentNode, operation: OperationDefinitionNode): SubscriptionPlan {
    let byName = this.plans.get(document);
    if (!byName) this.plans.set(document, (byName = new Map<string, SubscriptionPlan>()));
    const name = operation.name?.value ?? '';
    const known = byName.get(name);
    if (known) return known;
    const plan = planSubscription(loaded.apiSchema, this.joinOf(loaded), document, operation, callerDependent(loaded));
    byName.set(name, plan);
    return plan;
  }

  /**
   * A new supergraph: what still validates stays open (an additive publish ends nothing); the
   * rest ends with SUBSCRIPTION_SCHEMA_RELOAD, and the client subscribes again.
   */
  judge(loaded: LoadedSupergraph, active: Map<Channel, SubscriptionContext>, log: Logger): void {
    const seen = new Map<SubscriptionPlan, SubscriptionPlan | null>();
    let ended = 0;
    for (const [channel, ctx] of active) {
      const plan = this.replan(loaded, ctx, seen);
      if (plan && this.stillAllowed(loaded, ctx)) {
        ctx.plan = plan;
        continue;
      }
      ended++;
      channel.fail(error('The graph changed: subscribe again', 'SUBSCRIPTION_SCHEMA_RELOAD'));
    }
    if (active.size + ended > 0) log.info({ kept: active.size, ended }, 'subscriptions judged against the new supergraph');
  }

  private joinOf(loaded: LoadedSupergraph): JoinMap {
    if (this.joins?.loaded !== loaded) this.joins = { loaded, join: readJoinMap(loaded.supergraph) };
    return this.joins.join;
  }

  /**
   * The plan of a live subscription under a new supergraph, or null when it must end: its
   * operation no longer validates, or the subgraph subscription itself would differ (which the
   * open upstream cannot follow). Entity fetches may change: the new plan's are used from the
   * next event on. Judged once per document and operation, however many subscribe with it.
   */
  private replan(
    loaded: LoadedSupergraph,
    ctx: SubscriptionContext,
    seen: Map<SubscriptionPlan, SubscriptionPlan | null>,
  ): SubscriptionPlan | null {
    if (seen.has(ctx.plan)) return seen.get(ctx.plan)!;
    let plan: SubscriptionPlan | null = null;
    if (this.documents.validates(loaded.apiSchema, ctx.document)) {
      try {
        const next = planSubscription(loaded.apiSchema, this.joinOf(loaded), ctx.document, ctx.operation, callerDependent(loaded));
        if (next.graph === ctx.plan.graph && next.query === ctx.plan.query) plan = next;
      } catch {
        plan = null;
      }
    }
    seen.set(ctx.plan, plan);
    return plan;
  }

  /** Whether one subscriber's operation still passes every check (variables, limits, auth). */
  private stillAllowed(loaded: LoadedSupergraph, ctx: SubscriptionContext): boolean {
    if (getVariableValues(loaded.apiSchema, ctx.operation.variableDefinitions ?? [], ctx.variables).errors) return false;
    try {
      this.policy.check(loaded.apiSchema, ctx.document, ctx.operation, ctx.variables, ctx.connection.caller);
      return true;
    } catch {
      return false;
    }
  }
}

/** The coordinates whose answer depends on the caller (`@authenticated`): fetched with their credentials. */
function callerDependent(loaded: LoadedSupergraph) {
  const { auth } = loaded.policy;
  return { has: (c: string) => auth.fields.has(c) || auth.types.has(c) };
}
