import { Router, type Request, type Response } from 'express';
import { callerFromHeader, mountRestRoutes, requireCaller, type RestHandler } from '@halo/kit';
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

/** Writes a stored response exactly: the same status, headers and bytes for the first answer and every replay. */
function sendOutcome(res: Response, { response, replayed }: Outcome): void {
  res.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.end(response.body);
}

/** 409 `Request in progress` carries `Retry-After`; the kit's error mapper writes the status and body. */
function withRetryAfter(handler: RestHandler): RestHandler {
  return async (req, res, input) => {
    try {
      await handler(req, res, input);
    } catch (err) {
      if (err instanceof RequestInProgress) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  };
}

export function restRoutes(payments: Payments, jwtSecret: string | undefined): Router {
  // The gateway verified the caller already; every service verifies again (no trust by position).
  const caller = (req: Request) => callerFromHeader(req.headers.authorization, jwtSecret);
  // Who, then the key, then the body: the order docs/api/resources.md gives for POST /api/payments.
  const payer = (req: Request) => {
    payments.payer(caller(req));
    idempotencyKey(req.headers['idempotency-key']);
  };

  // Everything here is personal, errors included: never stored by a cache (docs/api/conventions.md).
  const router = Router().use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // An anonymous caller gets 401 even for a malformed id (who before which).
  return mountRestRoutes(router, restManifest, {
    createPayment: {
      authorize: payer,
      handle: withRetryAfter(async (req, res) => {
        // The fingerprint covers the body as sent (every member), and the route's own path, so
        // /api/payments and /api/v1/payments are the same request.
        const outcome = await payments.createPayment(caller(req), {
          idempotencyKey: req.headers['idempotency-key'],
          body: req.body,
          method: 'POST',
          path: PAYMENTS_PATH,
        });
        sendOutcome(res, outcome);
      }),
    },
    getPayment: {
      authorize: (req) => requireCaller(caller(req)),
      handle: async (req, res, { params }) => {
        res.json({ data: paymentJson(await payments.getPayment(caller(req), params.id)) });
      },
    },
    listOrders: async (req, res) => {
      res.json({ data: (await payments.listOrders(caller(req))).map(orderJson) });
    },
    createOrder: {
      authorize: (req) => payments.payer(caller(req)),
      handle: async (req, res, { body }) => {
        const { order, created } = await payments.createOrder(caller(req), body);
        res.status(created ? 201 : 200).json({ data: orderJson(order) });
      },
    },
    getOrder: {
      authorize: (req) => requireCaller(caller(req)),
      handle: async (req, res, { params }) => {
        res.json({ data: orderJson(await payments.getOrder(caller(req), params.id)) });
      },
    },
  }, { jwtSecret });
}
