import { Router, type Request, type Response } from 'express';
import { requireCaller } from '@halo/kit/auth';
import { mountRestRoutes, type RestCaller, type RestHandler } from '@halo/kit/rest';
import type { Order, Outcome } from '../domain/model';
import type { Payments } from '../domain/payments';
import { idempotencyKey, paymentJson, PAYMENTS_PATH, RequestInProgress } from '../domain/rules';
import { restManifest } from './manifest';

export const orderJson = (o: Order) => ({
  id: o.id,
  user_id: o.userId,
  product_id: o.productId,
  client_order_id: o.clientOrderId,
  created_at: o.createdAt,
});

/** An order's URL path: the `Location` of a created one. */
export const orderPath = (o: Order) => `/api/orders/${o.id}`;

/** Writes a stored response exactly: the same status, headers and bytes for the first answer and every replay. */
function sendOutcome(res: Response, { response, replayed }: Outcome): void {
  res.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.end(response.body);
}

/** 409 `Request in progress` carries `Retry-After`; the kit's error mapper writes the status and body. */
function withRetryAfter<R>(handler: RestHandler<R>): RestHandler<R> {
  return async (req, res, input) => {
    try {
      await handler(req, res, input);
    } catch (err) {
      if (err instanceof RequestInProgress) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  };
}

/** Who may call: any caller (401 `Token required` for none). */
const anyCaller = (_req: Request, { caller }: RestCaller) => requireCaller(caller());

export function restRoutes(payments: Payments, jwtSecret: string | undefined): Router {
  // The gateway verified the caller already; every service verifies again (no trust by position),
  // once per request: `caller()` is the kit's (mountRestRoutes).
  // Who, then the key, then the body: the order docs/api/resources.md gives for POST /api/payments.
  const payer = (req: Request, { caller }: RestCaller) => {
    payments.payer(caller());
    idempotencyKey(req.headers['idempotency-key']);
  };

  // Everything here is personal, errors included: never stored by a cache (docs/api/conventions.md).
  const router = Router().use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // An anonymous caller gets 401 even for a malformed id (who before which).
  return mountRestRoutes(
    router,
    restManifest,
    {
      createPayment: {
        authorize: payer,
        handle: withRetryAfter(async (req, res, { caller }) => {
          // The fingerprint covers the body as sent (every member), and the route's own path, so
          // /api/payments and /api/v1/payments are the same request.
          const outcome = await payments.createPayment(caller(), {
            idempotencyKey: req.headers['idempotency-key'],
            body: req.body,
            method: 'POST',
            path: PAYMENTS_PATH,
          });
          sendOutcome(res, outcome);
        }),
      },
      getPayment: {
        authorize: anyCaller,
        handle: async (_req, res, { params, caller }) => {
          res.json({ data: paymentJson(await payments.getPayment(caller(), params.id)) });
        },
      },
      listOrders: async (_req, res, { caller }) => {
        res.json({ data: (await payments.listOrders(caller())).map(orderJson) });
      },
      createOrder: {
        authorize: (_req, { caller }) => payments.payer(caller()),
        handle: async (_req, res, { body, caller }) => {
          const { order, created } = await payments.createOrder(caller(), body);
          // A new order is a new resource: Location names it (docs/api/resources.md, "Orders").
          if (created) res.status(201).location(orderPath(order));
          res.json({ data: orderJson(order) });
        },
      },
      getOrder: {
        authorize: anyCaller,
        handle: async (_req, res, { params, caller }) => {
          res.json({ data: orderJson(await payments.getOrder(caller(), params.id)) });
        },
      },
    },
    { jwtSecret },
  );
}
