/**
 * Payments and orders as the domain sees them. Money is integer cents (exact); REST and GraphQL
 * render it as `amount`, a number with at most 2 decimals. Timestamps are ISO-8601 UTC.
 */
export type PaymentStatus = 'pending' | 'succeeded';

export interface Payment {
  id: number;
  /** The caller who paid: the user behind the token (an API key acts as its owner). */
  userId: number;
  idempotencyKey: string;
  /** SHA-256 (hex) of the request that created it: method, path and canonical JSON body. */
  requestHash: string;
  amountCents: number;
  currency: string;
  status: PaymentStatus;
  /** The processor's id of the charge, once it succeeded. */
  processorRef: string | null;
  createdAt: string;
}

/** What a payment is inserted with (as `pending`, before the processor is called). */
export interface NewPayment {
  userId: number;
  idempotencyKey: string;
  requestHash: string;
  amountCents: number;
  currency: string;
}

export interface Order {
  id: number;
  userId: number;
  productId: number;
  /** Chosen by the client, 1–100 characters, unique per user: what makes a retried create safe. */
  clientOrderId: string;
  createdAt: string;
}

export interface NewOrder {
  userId: number;
  productId: number;
  clientOrderId: string;
}

/** A response as the idempotency layer stores and replays it: status, the headers that matter, exact body. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answer to a payment request: the response, and whether it is a replay of an earlier one. */
export interface Outcome {
  response: StoredResponse;
  replayed: boolean;
}
