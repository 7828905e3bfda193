import type { Db } from '@halo/kit/db';
import type { NewOrder, NewPayment, Order, Payment, PaymentStatus } from '../domain/model';
import type { PaymentsRepo } from '../domain/payments';

interface PaymentRow {
  id: number;
  user_id: number;
  idempotency_key: string;
  request_hash: string;
  amount_cents: number;
  currency: string;
  status: PaymentStatus;
  processor_ref: string | null;
  created_at: Date;
}

interface OrderRow {
  id: number;
  user_id: number;
  product_id: number;
  client_order_id: string;
  created_at: Date;
}

/** numeric(12,2) × 100 is a whole number: read as bigint cents, never through a double. */
const PAYMENT_COLS =
  'id, user_id, idempotency_key, request_hash, (amount * 100)::bigint AS amount_cents, currency, status, processor_ref, created_at';
const ORDER_COLS = 'id, user_id, product_id, client_order_id, created_at';

const toPayment = (r: PaymentRow): Payment => ({
  id: r.id,
  userId: r.user_id,
  idempotencyKey: r.idempotency_key,
  requestHash: r.request_hash,
  amountCents: r.amount_cents,
  currency: r.currency,
  status: r.status,
  processorRef: r.processor_ref,
  createdAt: r.created_at.toISOString(),
});

const toOrder = (r: OrderRow): Order => ({
  id: r.id,
  userId: r.user_id,
  productId: r.product_id,
  clientOrderId: r.client_order_id,
  createdAt: r.created_at.toISOString(),
});

/** Every SQL statement of the payments service. */
export class PaymentsStore implements PaymentsRepo {
  constructor(private readonly db: Db) {}

  async insertPendingPayment(p: NewPayment): Promise<Payment | null> {
    const { rows } = await this.db.query<PaymentRow>(
      `INSERT INTO payments (user_id, idempotency_key, request_hash, amount, currency, status)
       VALUES ($1, $2, $3, $4::bigint / 100.0, $5, 'pending')
       ON CONFLICT (user_id, idempotency_key) DO NOTHING
       RETURNING ${PAYMENT_COLS}`,
      [p.userId, p.idempotencyKey, p.requestHash, p.amountCents, p.currency],
    );
    return rows[0] ? toPayment(rows[0]) : null;
  }

  async paymentByKey(userId: number, key: string): Promise<Payment | null> {
    const { rows } = await this.db.query<PaymentRow>(`SELECT ${PAYMENT_COLS} FROM payments WHERE user_id = $1 AND idempotency_key = $2`, [
      userId,
      key,
    ]);
    return rows[0] ? toPayment(rows[0]) : null;
  }

  async completePayment(id: number, processorRef: string): Promise<Payment | null> {
    const { rows } = await this.db.query<PaymentRow>(
      `UPDATE payments SET status = 'succeeded', processor_ref = $2, updated_at = now()
       WHERE id = $1 AND status = 'pending'
       RETURNING ${PAYMENT_COLS}`,
      [id, processorRef],
    );
    return rows[0] ? toPayment(rows[0]) : null;
  }

  async deletePendingPayment(id: number): Promise<void> {
    await this.db.query(`DELETE FROM payments WHERE id = $1 AND status = 'pending'`, [id]);
  }

  /** The database's clock decides staleness, so replicas with skewed clocks agree. */
  async takeOverStalePayment(id: number, staleMs: number): Promise<Payment | null> {
    const { rows } = await this.db.query<PaymentRow>(
      `UPDATE payments SET updated_at = now()
       WHERE id = $1 AND status = 'pending' AND updated_at < now() - $2 * interval '1 millisecond'
       RETURNING ${PAYMENT_COLS}`,
      [id, staleMs],
    );
    return rows[0] ? toPayment(rows[0]) : null;
  }

  async paymentsByIds(ids: readonly number[]): Promise<Payment[]> {
    const { rows } = await this.db.query<PaymentRow>(`SELECT ${PAYMENT_COLS} FROM payments WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(toPayment);
  }

  async insertOrder(o: NewOrder): Promise<Order | null> {
    const { rows } = await this.db.query<OrderRow>(
      `INSERT INTO orders (user_id, product_id, client_order_id)
       VALUES ($1, $2, $3)
       ON CONFLICT (user_id, client_order_id) DO NOTHING
       RETURNING ${ORDER_COLS}`,
      [o.userId, o.productId, o.clientOrderId],
    );
    return rows[0] ? toOrder(rows[0]) : null;
  }

  async orderByClientId(userId: number, clientOrderId: string): Promise<Order | null> {
    const { rows } = await this.db.query<OrderRow>(`SELECT ${ORDER_COLS} FROM orders WHERE user_id = $1 AND client_order_id = $2`, [
      userId,
      clientOrderId,
    ]);
    return rows[0] ? toOrder(rows[0]) : null;
  }

  async ordersByIds(ids: readonly number[]): Promise<Order[]> {
    const { rows } = await this.db.query<OrderRow>(`SELECT ${ORDER_COLS} FROM orders WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(toOrder);
  }

  async ordersOfUsers(userIds: readonly number[]): Promise<Order[]> {
    const { rows } = await this.db.query<OrderRow>(
      `SELECT ${ORDER_COLS} FROM orders WHERE user_id = ANY($1::bigint[]) ORDER BY user_id, id DESC`,
      [userIds],
    );
    return rows.map(toOrder);
  }
}
