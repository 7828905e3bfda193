import { createHash } from 'node:crypto';
import { badRequest, HaloError } from '@halo/kit/errors';
import type { Payment, StoredResponse } from './model';

/** docs/api/resources.md "Payments": keys are opaque strings of 1–255 characters. */
export const MAX_IDEMPOTENCY_KEY = 255;
/** numeric(12,2): 9,999,999,999.99. */
export const MAX_AMOUNT_CENTS = 999_999_999_999;
/** Spec "Limits": client_order_id at most 100 characters. */
export const MAX_CLIENT_ORDER_ID = 100;

export const IDEMPOTENCY_KEY_REQUIRED = 'Idempotency-Key required';
/** A comma separates list members in a header: a key never holds one. */
export const KEY_WITH_COMMA = 'Idempotency-Key must not contain a comma';
export const KEY_REUSED = 'Idempotency-Key reused with a different request';
export const REQUEST_IN_PROGRESS = 'Request in progress';
export const STORE_UNAVAILABLE = 'Idempotency store unavailable';
export const PROCESSOR_UNAVAILABLE = 'Payment processor unavailable';
export const PRODUCT_NOT_FOUND = 'Product not found';

/** The path whose requests are fingerprinted; GraphQL's `createPayment` is the same request (one key space). */
export const PAYMENTS_PATH = '/api/payments';

type Body = Record<string, unknown>;
const asBody = (raw: unknown): Body => (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Body) : {});

/**
 * The `Idempotency-Key` header: required (missing or blank → 400), at most 255 characters, kept
 * exactly as sent. Never a comma: in a header a comma separates list members (RFC 9110 §5.3), so
 * `k1, k2` is two keys folded into one line, which every service refuses before this (the kit's
 * single-valued headers); GraphQL's `idempotencyKey` is held to the same, so a key means the same
 * on both transports.
 */
export function idempotencyKey(raw: unknown): string {
  const key: unknown = Array.isArray(raw) ? raw[0] : raw;
  if (typeof key !== 'string' || key.trim() === '') throw badRequest(IDEMPOTENCY_KEY_REQUIRED);
  if (key.length > MAX_IDEMPOTENCY_KEY) throw badRequest(`Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY} characters`);
  if (key.includes(',')) throw badRequest(KEY_WITH_COMMA);
  return key;
}

/**
 * `amount`: a JSON number (never a string) > 0 with at most 2 decimals, in cents. 19.99 × 100
 * rounds to 1999 and back to 19.99; 19.999 or 0.1 + 0.2 do not come back to themselves.
 */
export function amountCents(raw: unknown): number {
  if (raw === undefined || raw === null) throw badRequest('amount is required');
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0 || Math.round(raw * 100) / 100 !== raw) {
    throw badRequest('amount must be a positive number with at most 2 decimals');
  }
  const cents = Math.round(raw * 100);
  if (cents > MAX_AMOUNT_CENTS) throw badRequest(`amount must be at most ${centsToAmount(MAX_AMOUNT_CENTS)}`);
  return cents;
}

/** A payment request body: `{amount}`; other members are ignored here (they still count in the fingerprint). */
export const paymentInput = (raw: unknown) => ({ amountCents: amountCents(asBody(raw).amount) });

/** Cents → the decimal amount (exactly the double a JSON parser reads for the 2-decimal text). */
export const centsToAmount = (cents: number) => cents / 100;

const DIGITS = /^\d{1,15}$/;

/** `product_id`: a positive integer (a JSON number, or the digits of a GraphQL ID). */
export function productId(raw: unknown): number {
  if (raw === undefined || raw === null || raw === '') throw badRequest('product_id is required');
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && DIGITS.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) throw badRequest('product_id must be a positive integer');
  return n;
}

/** `client_order_id`: 1–100 characters, opaque (not trimmed: it is the client's key, byte for byte). */
export function clientOrderId(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw badRequest('client_order_id is required');
  if (raw.length > MAX_CLIENT_ORDER_ID) throw badRequest(`client_order_id must be at most ${MAX_CLIENT_ORDER_ID} characters`);
  return raw;
}

/** An order request body, product first (the order the contract lists them in). */
export function orderInput(raw: unknown): { productId: number; clientOrderId: string } {
  const body = asBody(raw);
  return { productId: productId(body.product_id), clientOrderId: clientOrderId(body.client_order_id) };
}

/**
 * JSON with object members sorted by name at every level and no whitespace: two bodies that mean
 * the same (`{"b":1,"a":2}` and `{ "a": 2, "b": 1 }`) have the same text. Arrays keep their order.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const members = Object.keys(value as Body)
      .filter((k) => (value as Body)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Body)[k])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** What makes two requests "the same" for a key: SHA-256 of method, path and canonical JSON body. */
export const requestFingerprint = (method: string, path: string, body: unknown) =>
  sha256Hex(`${method.toUpperCase()}\n${path}\n${canonicalJson(body)}`);

/**
 * The key the processor sees: derived from (caller, key), so it is unique across callers (a
 * processor scopes keys to its merchant, Halo) and the same for every retry of one payment.
 */
export const processorKey = (userId: number, key: string) => `halo_${sha256Hex(`${userId}\n${key}`)}`;

/** 409 `Request in progress` (`status: "processing"`); the REST adapter writes `Retry-After`. */
export class RequestInProgress extends HaloError {
  constructor(readonly retryAfterSeconds: number) {
    super('CONFLICT', REQUEST_IN_PROGRESS, { status: 'processing' });
  }
}

/** Seconds for `Retry-After`: at least 1, rounded up. */
export const retryAfterSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export const keyReused = () => new HaloError('UNPROCESSABLE', KEY_REUSED);

/** A payment as REST (and the stored response) shows it. */
export const paymentJson = (p: Payment) => ({
  id: p.id,
  amount: centsToAmount(p.amountCents),
  currency: p.currency,
  status: p.status,
  created_at: p.createdAt,
});

/**
 * The answer to a created payment, exactly as it is stored and replayed: the REST response
 * (GraphQL reads its payment back from the same bytes, so a key is one payment on every transport).
 */
export function paymentCreated(p: Payment): StoredResponse {
  return {
    status: 201,
    headers: { 'content-type': 'application/json; charset=utf-8', location: `${PAYMENTS_PATH}/${p.id}` },
    body: JSON.stringify({ data: paymentJson(p) }),
  };
}

/** The payment inside a stored `paymentCreated` response. */
export function paymentOfResponse(r: StoredResponse): ReturnType<typeof paymentJson> {
  return (JSON.parse(r.body) as { data: ReturnType<typeof paymentJson> }).data;
}
