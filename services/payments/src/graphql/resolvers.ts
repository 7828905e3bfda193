import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Caller } from '@halo/kit/auth';
import { parseId } from '@halo/kit/domain';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Order } from '../domain/model';
import type { Payments } from '../domain/payments';
import { paymentJson, paymentOfResponse, PAYMENTS_PATH } from '../domain/rules';
import type { Loaders } from './loaders';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
  loaders: Loaders;
}

/** A payment as GraphQL reads it: the REST representation (a replay is exactly those stored bytes). */
type PaymentView = ReturnType<typeof paymentJson>;

/**
 * The subgraph over the domain: mutations call use cases (authorisation is theirs), entities and
 * nested lists go through the request's loaders (domain batch methods) with the domain's
 * ownership rule. `Order.product` and `Order.user` are references: the gateway fetches them from
 * catalog and content, batched there too.
 */
export function paymentsSchema(typeDefs: DocumentNode, payments: Payments): GraphQLSchema {
  const ownOrder = async (ctx: GraphQLContext, id: number) => payments.ownOrder(ctx.caller, await ctx.loaders.orderById.load(id));
  const ownPayment = async (ctx: GraphQLContext, id: number): Promise<PaymentView> =>
    paymentJson(payments.ownPayment(ctx.caller, await ctx.loaders.paymentById.load(id)));
  // Entity references from the gateway: someone else's (or an unknown) id is null, never an error.
  const orNull = <T>(p: Promise<T>) => p.catch(() => null);

  const resolvers = {
    Query: {
      order: (_: unknown, args: { id: string }, ctx: GraphQLContext) => ownOrder(ctx, parseId(args.id)),
      payment: (_: unknown, args: { id: string }, ctx: GraphQLContext) => ownPayment(ctx, parseId(args.id)),
    },
    Mutation: {
      // The same request as REST's POST /api/payments {"amount": …}: one key space, one payment.
      createPayment: async (_: unknown, args: { amount: number; idempotencyKey: string }, ctx: GraphQLContext): Promise<PaymentView> => {
        const outcome = await payments.createPayment(ctx.caller, {
          idempotencyKey: args.idempotencyKey,
          body: { amount: args.amount },
          method: 'POST',
          path: PAYMENTS_PATH,
        });
        return paymentOfResponse(outcome.response);
      },
      createOrder: async (_: unknown, args: { productId: string; clientOrderId: string }, ctx: GraphQLContext) =>
        (await payments.createOrder(ctx.caller, { product_id: args.productId, client_order_id: args.clientOrderId })).order,
    },
    User: {
      __resolveReference: (ref: { id: string }) => ({ id: ref.id }),
      orders: (user: { id: string }, _: unknown, ctx: GraphQLContext) => {
        const id = Number(user.id);
        return payments.seesOrdersOf(ctx.caller, id) ? ctx.loaders.ordersByUserId.load(id) : [];
      },
    },
    Order: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => orNull(ownOrder(ctx, parseId(ref.id))),
      product: (o: Order) => ({ __typename: 'Product', id: String(o.productId) }),
      user: (o: Order) => ({ __typename: 'User', id: String(o.userId) }),
    },
    Payment: {
      __resolveReference: (ref: { id: string }, ctx: GraphQLContext) => orNull(ownPayment(ctx, parseId(ref.id))),
      createdAt: (p: PaymentView) => p.created_at,
    },
  };
  // The resolver map is typed with our context; Apollo's type wants its own (hence the cast).
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
