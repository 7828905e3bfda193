import { requireCaller, type Caller } from '@halo/kit/auth';
import { alignById, groupByKey } from '@halo/kit/domain';
import { found, HaloError, isHaloError, notFound, unavailable } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import type { Idempotency } from './idempotency';
import type { NewOrder, NewPayment, Order, Outcome, Payment, StoredResponse } from './model';
import {
  idempotencyKey,
  keyReused,
  orderInput,
  paymentCreated,
  paymentInput,
  processorKey,
  PROCESSOR_UNAVAILABLE,
  PRODUCT_NOT_FOUND,
  RequestInProgress,
  requestFingerprint,
} from './rules';

/** What the domain needs from storage; `PaymentsStore` implements it over SQL. */
export interface PaymentsRepo {
  /** INSERT … ON CONFLICT (user_id, idempotency_key) DO NOTHING: the new pending payment, or null. */
  insertPendingPayment(p: NewPayment): Promise<Payment | null>;
  paymentByKey(userId: number, key: string): Promise<Payment | null>;
  /** pending → succeeded with the processor's reference; null when it was not pending any more. */
  completePayment(id: number, processorRef: string): Promise<Payment | null>;
  /** Deletes a payment only while it is pending (a failed charge), so the retry can insert again. */
  deletePendingPayment(id: number): Promise<void>;
  /** Takes over a payment pending for longer than `staleMs` (its request died): touched and returned, or null. */
  takeOverStalePayment(id: number, staleMs: number): Promise<Payment | null>;
  paymentsByIds(ids: readonly number[]): Promise<Payment[]>;
  /** INSERT … ON CONFLICT (user_id, client_order_id) DO NOTHING RETURNING: the new order, or null. */
  insertOrder(o: NewOrder): Promise<Order | null>;
  orderByClientId(userId: number, clientOrderId: string): Promise<Order | null>;
  ordersByIds(ids: readonly number[]): Promise<Order[]>;
  /** Every order of these users, newest first. */
  ordersOfUsers(userIds: readonly number[]): Promise<Order[]>;
}

/**
 * A payment processor. It charges at most once per idempotency key, as real processors do: a
 * repeated key answers the first charge. It may throw (down, timed out, declined); then nothing
 * is recorded here and the caller's retry runs again with the same key.
 */
export interface PaymentProcessor {
  charge(req: { idempotencyKey: string; amountCents: number; currency: string }): Promise<{ id: string }>;
}

/** catalog's products, as orders need them. Throws 503 (HaloError UNAVAILABLE) when catalog cannot answer. */
export interface ProductDirectory {
  exists(productId: number): Promise<boolean>;
}

export interface PaymentsDeps {
  repo: PaymentsRepo;
  idempotency: Idempotency;
  processor: PaymentProcessor;
  products: ProductDirectory;
  currency: string;
  /** Deadline of one processor call. */
  processorTimeoutMs: number;
  /** The idempotency lock's lifetime: with the processor deadline, when a pending payment is surely orphaned. */
  lockMs: number;
  logger?: Logger | undefined;
}

/** The request a payment comes from, as the fingerprint sees it (GraphQL passes the REST equivalent). */
export interface PaymentRequest {
  idempotencyKey: unknown;
  body: unknown;
  method: string;
  path: string;
}

/**
 * The payments and orders use cases, once, for every transport. Order of checks everywhere:
 * who (401, then 403 for a key without `payments:write`), then what (400), then which (404).
 */
export class Payments {
  /** A pending payment older than this has no live request left (processor deadline + lock + slack). */
  private readonly staleMs: number;

  constructor(private readonly deps: PaymentsDeps) {
    this.staleMs = deps.processorTimeoutMs + deps.lockMs + 1_000;
  }

  /** 401: who may create payments and orders (an API key's scope is declared per operation, held to by the kit). */
  payer(caller: Caller | null): Caller {
    return requireCaller(caller);
  }

  /**
   * `POST /api/payments`, `createPayment`: charges once per (caller, key); a repeat replays the
   * first answer. `render` is never called for a replay from the store.
   */
  async createPayment(
    caller: Caller | null,
    req: PaymentRequest,
    render: (p: Payment) => StoredResponse = paymentCreated,
  ): Promise<Outcome> {
    const payer = this.payer(caller);
    const key = idempotencyKey(req.idempotencyKey);
    const { amountCents } = paymentInput(req.body);
    const fingerprint = requestFingerprint(req.method, req.path, req.body);
    const payment: NewPayment = {
      userId: payer.id,
      idempotencyKey: key,
      requestHash: fingerprint,
      amountCents,
      currency: this.deps.currency,
    };
    return this.deps.idempotency.run({ caller: payer.id, key, fingerprint }, async () => {
      const { payment: p, replayed } = await this.charge(payment);
      return { response: render(p), replayed };
    });
  }

  /**
   * The fence: the payment row is inserted (pending) BEFORE the processor is called, under the
   * unique (caller, key). Whoever cannot insert finds the row and replays it, waits, or (when its
   * request died) takes it over; the processor's own idempotency key makes a taken-over charge the
   * same charge.
   */
  private async charge(p: NewPayment): Promise<{ payment: Payment; replayed: boolean }> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted = await this.deps.repo.insertPendingPayment(p);
      if (inserted) return { payment: await this.settle(inserted), replayed: false };
      const existing = await this.deps.repo.paymentByKey(p.userId, p.idempotencyKey);
      // Gone between the two statements: its charge failed and it was deleted. Insert again.
      if (!existing) continue;
      if (existing.requestHash !== p.requestHash) throw keyReused();
      if (existing.status === 'succeeded') return { payment: existing, replayed: true };
      const orphan = await this.deps.repo.takeOverStalePayment(existing.id, this.staleMs);
      if (!orphan) throw new RequestInProgress(1);
      this.deps.logger?.warn({ paymentId: orphan.id }, 'resuming a payment whose request died while pending');
      return { payment: await this.settle(orphan), replayed: false };
    }
    throw new RequestInProgress(1);
  }

  /** Calls the processor for a pending payment: succeeded, or deleted again and 503. */
  private async settle(p: Payment): Promise<Payment> {
    let charge: { id: string };
    try {
      charge = await withDeadline(
        this.deps.processor.charge({
          idempotencyKey: processorKey(p.userId, p.idempotencyKey),
          amountCents: p.amountCents,
          currency: p.currency,
        }),
        this.deps.processorTimeoutMs,
      );
    } catch (err) {
      this.deps.logger?.warn({ err, paymentId: p.id }, 'payment processor failed; the payment is withdrawn and may be retried');
      await this.deps.repo.deletePendingPayment(p.id);
      throw unavailable(PROCESSOR_UNAVAILABLE);
    }
    // Not pending any more: a take-over completed it first, with the same charge (same processor key).
    return (await this.deps.repo.completePayment(p.id, charge.id)) ?? found(await this.deps.repo.paymentByKey(p.userId, p.idempotencyKey));
  }

  /** Payments by id, null where unknown (the DataLoader's batch). */
  async lookUpPayments(ids: readonly number[]): Promise<(Payment | null)[]> {
    return alignById(ids, await this.deps.repo.paymentsByIds(ids));
  }

  /** The caller's own payment; anyone else's is 404, exactly like one that does not exist. */
  ownPayment(caller: Caller | null, payment: Payment | null): Payment {
    const c = requireCaller(caller);
    if (!payment || payment.userId !== c.id) throw notFound();
    return payment;
  }

  /** `GET /api/payments/:id`. */
  async getPayment(caller: Caller | null, id: number): Promise<Payment> {
    requireCaller(caller);
    const [payment] = await this.lookUpPayments([id]);
    return this.ownPayment(caller, payment ?? null);
  }

  /**
   * `POST /api/orders`, `createOrder`: natural idempotency on (caller, client_order_id). An
   * existing order is answered as it is (created: false) without asking catalog again; a new one
   * needs its product to exist in catalog (404 `Product not found`, 503 when catalog is down).
   */
  async createOrder(caller: Caller | null, body: unknown): Promise<{ order: Order; created: boolean }> {
    const payer = this.payer(caller);
    const input = orderInput(body);
    const existing = await this.deps.repo.orderByClientId(payer.id, input.clientOrderId);
    if (existing) return { order: existing, created: false };
    let exists: boolean;
    try {
      exists = await this.deps.products.exists(input.productId);
    } catch (err) {
      if (isHaloError(err) && err.kind === 'UNAVAILABLE') throw unavailable();
      throw err;
    }
    if (!exists) throw new HaloError('NOT_FOUND', PRODUCT_NOT_FOUND);
    const inserted = await this.deps.repo.insertOrder({ userId: payer.id, ...input });
    if (inserted) return { order: inserted, created: true };
    // A concurrent identical request inserted it between our read and our insert.
    return { order: found(await this.deps.repo.orderByClientId(payer.id, input.clientOrderId)), created: false };
  }

  /** Orders by id, null where unknown (the DataLoader's batch). */
  async lookUpOrders(ids: readonly number[]): Promise<(Order | null)[]> {
    return alignById(ids, await this.deps.repo.ordersByIds(ids));
  }

  /** Each user's orders, newest first, in the order of `userIds`: one statement for a whole batch. */
  async ordersOfUsers(userIds: readonly number[]): Promise<Order[][]> {
    return groupByKey(userIds, await this.deps.repo.ordersOfUsers(userIds), (o) => o.userId);
  }

  /** The caller's own order; anyone else's is 404. */
  ownOrder(caller: Caller | null, order: Order | null): Order {
    const c = requireCaller(caller);
    if (!order || order.userId !== c.id) throw notFound();
    return order;
  }

  /** `GET /api/orders/:id`. */
  async getOrder(caller: Caller | null, id: number): Promise<Order> {
    requireCaller(caller);
    const [order] = await this.lookUpOrders([id]);
    return this.ownOrder(caller, order ?? null);
  }

  /** `GET /api/orders`: the caller's orders, newest first. */
  async listOrders(caller: Caller | null): Promise<Order[]> {
    const c = requireCaller(caller);
    return (await this.ordersOfUsers([c.id]))[0]!;
  }

  /** Whether `caller` may see `userId`'s orders (`User.orders`): only the user themself. */
  seesOrdersOf(caller: Caller | null, userId: number): boolean {
    return caller !== null && caller.id === userId;
  }

  ready(): Promise<void> {
    return this.deps.idempotency.ping();
  }
}

/** Rejects when `promise` has not settled within `ms` (the processor call's deadline). */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
