import { z } from '@halo/kit/config';
import { defineRestManifest, pathId, ruleField } from '@halo/kit/rest';
import { centsToAmount, clientOrderId, MAX_AMOUNT_CENTS, MAX_CLIENT_ORDER_ID, paymentInput, productId } from '../domain/rules';

/**
 * payments' public REST routes (gateway route table and OpenAPI are composed from this file by
 * `npm run compose`). Every route needs a caller; POSTs from an API key need `payments:write`.
 * Field checks call the domain's own rules, so a 400 reads the same here and in GraphQL.
 */

const amount = ruleField((v) => paymentInput({ amount: v }), {
  type: 'number',
  exclusiveMinimum: 0,
  maximum: centsToAmount(MAX_AMOUNT_CENTS),
  description: 'A JSON number > 0 with at most 2 decimals',
});

const newOrder = z.object({
  product_id: ruleField(productId, { type: 'integer', minimum: 1, description: 'A catalog product' }),
  client_order_id: ruleField(clientOrderId, {
    type: 'string',
    minLength: 1,
    maxLength: MAX_CLIENT_ORDER_ID,
    description: 'Chosen by the client; unique per user: repeating it answers the existing order (200)',
  }),
});

const payment = z.object({
  id: z.number().int(),
  amount: z.number(),
  currency: z.string().meta({ description: 'ISO 4217 (PAYMENTS_CURRENCY)' }),
  status: z.enum(['pending', 'succeeded']),
  created_at: z.iso.datetime(),
});
const order = z.object({
  id: z.number().int(),
  user_id: z.number().int(),
  product_id: z.number().int(),
  client_order_id: z.string(),
  created_at: z.iso.datetime(),
});
const one = (p: z.ZodType) => z.object({ data: p });

const FORBIDDEN = { description: '`Forbidden`: an API key needs scope `payments:write`' };
const NOT_FOUND = { description: '`Not found`: unknown, or another user’s' };
const processing = z.object({ error: z.literal('Request in progress'), status: z.literal('processing') });

export const restManifest = defineRestManifest({
  service: 'payments',
  description: 'Retry-safe payments (Idempotency-Key) and naturally idempotent orders',
  routes: [
    {
      id: 'createPayment',
      method: 'POST',
      path: '/api/payments',
      summary: 'Create a payment (retry-safe with Idempotency-Key)',
      description: [
        'Header `Idempotency-Key` (1–255 characters without a comma, e.g. a UUID v4) is required, once; keys are scoped to the caller.',
        'The first request is charged and answered 201. A repeat with the same key and the same request (method, path, JSON body)',
        'answers the first status and body byte for byte with `Idempotent-Replayed: true`, and charges nothing. While the first is',
        'in progress: 409 with `Retry-After`. The same key with another body: 422. A failed attempt (503) releases the key.',
        'Lock 30 s, stored response 24 h; Postgres refuses a second payment for one (caller, key) whatever happens to Redis.',
      ].join(' '),
      auth: 'required',
      scope: 'payments:write',
      idempotent: true,
      body: z.object({ amount }),
      responses: {
        201: {
          description: 'The payment (also the replay of a completed request, with `Idempotent-Replayed: true`)',
          schema: one(payment),
          location: 'The payment: `/api/payments/<id>`',
        },
        400: {
          description:
            '`Idempotency-Key required`, `Idempotency-Key must be at most 255 characters`, `Idempotency-Key must be sent once` (the header repeated, or two keys folded into one line: a comma), or the amount’s message',
        },
        403: FORBIDDEN,
        409: { description: '`Request in progress` (`status: "processing"`), with `Retry-After`', schema: processing, retryAfter: true },
        422: { description: '`Idempotency-Key reused with a different request`' },
        503: {
          description: '`Idempotency store unavailable` or `Payment processor unavailable`: nothing was charged; retry with the same key',
        },
      },
    },
    {
      id: 'getPayment',
      method: 'GET',
      path: '/api/payments/:id',
      summary: 'One of the caller’s payments',
      auth: 'required',
      scope: 'payments:read',
      params: z.object({ id: pathId() }),
      responses: { 200: { description: 'The payment', schema: one(payment) }, 404: NOT_FOUND },
    },
    {
      id: 'listOrders',
      method: 'GET',
      path: '/api/orders',
      summary: 'The caller’s orders, newest first',
      auth: 'required',
      scope: 'payments:read',
      responses: { 200: { description: 'The orders', schema: z.object({ data: z.array(order) }) } },
    },
    {
      id: 'createOrder',
      method: 'POST',
      path: '/api/orders',
      summary: 'Create an order (naturally idempotent on client_order_id)',
      description:
        'A new (caller, client_order_id) creates the order: 201. An existing one answers the existing order: 200, nothing created. ' +
        'The product must exist in catalog (asked over gRPC): 404 `Product not found`; catalog unreachable: 503.',
      auth: 'required',
      scope: 'payments:write',
      body: newOrder,
      responses: {
        200: { description: 'The existing order with this client_order_id', schema: one(order) },
        201: { description: 'The new order', schema: one(order), location: 'The order: `/api/orders/<id>`' },
        403: FORBIDDEN,
        404: { description: '`Product not found`' },
        503: { description: '`Service unavailable`: catalog could not be asked' },
      },
    },
    {
      id: 'getOrder',
      method: 'GET',
      path: '/api/orders/:id',
      summary: 'One of the caller’s orders',
      auth: 'required',
      scope: 'payments:read',
      params: z.object({ id: pathId() }),
      responses: { 200: { description: 'The order', schema: one(order) }, 404: NOT_FOUND },
    },
  ],
});
