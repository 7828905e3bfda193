import { idCursor, parseId, requiredText } from '@halo/kit/domain';
import { badRequest } from '@halo/kit/errors';
import { ORDERS, SORT_KEYS, type ListQuery, type MoneyField, type Order, type PageMeta, type ProductFields, type SortKey } from './model';

export const DEFAULT_PAGE = 1;
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
/** numeric(12,2): 9,999,999,999.99. */
export const MAX_PRICE_CENTS = 999_999_999_999;
export const MAX_NAME = 200;
export const MAX_CATEGORY = 50;
export const MAX_DESCRIPTION = 5000;

/** Largest batch of a by-ids lookup (gRPC GetProducts). */
export const MAX_IDS = 1000;

/** A batch of ids as a transport has them: at most MAX_IDS (checked first), each by the kit's id rule. */
export function idBatch(raw: readonly unknown[]): number[] {
  if (raw.length > MAX_IDS) throw badRequest(`At most ${MAX_IDS} ids`);
  return raw.map((id) => parseId(id));
}

const DIGITS = /^\d+$/;

/**
 * The spec's page/limit rule: a value that cannot be parsed as an integer, or is 0, falls back to
 * the default. An integer is a whole number value (GraphQL `Int`) or a string of decimal digits
 * (REST), at most 2^53 − 1. So `abc`, `1.5`, `1e3`, ` 2`, an empty or repeated parameter, and
 * negative values (`-1`: a page or size cannot be negative, and the spec gives no error for it)
 * all fall back to the default rather than fail.
 */
export function positiveIntOr(raw: unknown, fallback: number): number {
  let n: number;
  if (typeof raw === 'number') n = raw;
  else if (typeof raw === 'string' && DIGITS.test(raw)) n = Number(raw);
  else return fallback;
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** An absent optional parameter: missing, null (GraphQL) or empty (`?category=`, as an HTML form sends it). */
const absent = (v: unknown): v is undefined | null | '' => v === undefined || v === null || v === '';

function oneOf<T extends string>(raw: unknown, allowed: readonly T[], fallback: T, message: string): T {
  if (absent(raw)) return fallback;
  if (typeof raw === 'string' && (allowed as readonly string[]).includes(raw)) return raw as T;
  throw badRequest(message);
}

/** `GET /products` and `products(...)`: page/limit with fallbacks, exact category, whitelisted sort/order. */
export interface RawListQuery {
  page?: unknown;
  limit?: unknown;
  category?: unknown;
  sort?: unknown;
  order?: unknown;
}

export function listQuery(raw: RawListQuery): ListQuery {
  const sort: SortKey = oneOf(raw.sort, SORT_KEYS, 'id', 'Invalid sort');
  const order: Order = oneOf(raw.order, ORDERS, 'asc', 'Invalid order');
  if (!absent(raw.category) && typeof raw.category !== 'string') throw badRequest('Invalid category');
  return {
    page: positiveIntOr(raw.page, DEFAULT_PAGE),
    limit: Math.min(positiveIntOr(raw.limit, DEFAULT_LIMIT), MAX_LIMIT),
    category: absent(raw.category) ? null : raw.category,
    sort,
    order,
  };
}

/** Records skipped before the page: (page − 1) × limit. */
export const offsetOf = (q: Pick<ListQuery, 'page' | 'limit'>) => (q.page - 1) * q.limit;

export function pageMeta(q: Pick<ListQuery, 'page' | 'limit'>, total: number): PageMeta {
  return {
    page: q.page,
    limit: q.limit,
    total,
    totalPages: Math.ceil(total / q.limit),
    hasNext: q.page * q.limit < total,
    hasPrev: q.page > 1,
  };
}

/** Cents → the decimal price (exactly the double a JSON parser reads for the 2-decimal text). */
export const centsToPrice = (cents: number) => cents / 100;

function priceCents(raw: unknown, field: MoneyField): number {
  if (field === 'price_cents') {
    if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) throw badRequest('price_cents must be an integer >= 0');
    if (raw > MAX_PRICE_CENTS) throw badRequest(`price_cents must be at most ${MAX_PRICE_CENTS}`);
    return raw;
  }
  // A JSON number (never a string) whose value has at most 2 decimals: 19.99 × 100 rounds to
  // 1999 and back to 19.99; 19.999 or 0.1 + 0.2 do not come back to themselves.
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < 0 || Math.round(raw * 100) / 100 !== raw) {
    throw badRequest('price must be a number >= 0 with at most 2 decimals');
  }
  const cents = Math.round(raw * 100);
  if (cents > MAX_PRICE_CENTS) throw badRequest(`price must be at most ${centsToPrice(MAX_PRICE_CENTS)}`);
  return cents;
}

function description(raw: unknown): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw !== 'string') throw badRequest('description must be a string');
  const s = raw.trim();
  if (s.length > MAX_DESCRIPTION) throw badRequest(`description must be at most ${MAX_DESCRIPTION} characters`);
  return s;
}

type Body = Record<string, unknown>;
const asBody = (raw: unknown): Body => (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Body) : {});

/**
 * A new product from a request body. Unknown members (e.g. `id` or `created_at` copied from a
 * GET) are ignored. The first invalid field answers 400 with a message naming it.
 */
export function newProductFields(raw: unknown, money: MoneyField = 'price'): ProductFields {
  const body = asBody(raw);
  const name = requiredText(body.name, 'name', MAX_NAME);
  const desc = description(body.description);
  const category = requiredText(body.category, 'category', MAX_CATEGORY);
  if (absent(body[money])) throw badRequest(`${money} is required`);
  return { name, description: desc, category, priceCents: priceCents(body[money], money) };
}

/** A partial update: only the members present are validated and changed; none at all is a 400. */
export function productChanges(raw: unknown, money: MoneyField = 'price'): Partial<ProductFields> {
  const body = asBody(raw);
  const changes: Partial<ProductFields> = {};
  if (body.name !== undefined) changes.name = requiredText(body.name, 'name', MAX_NAME);
  if (body.description !== undefined) changes.description = description(body.description);
  if (body.category !== undefined) changes.category = requiredText(body.category, 'category', MAX_CATEGORY);
  if (body[money] !== undefined) changes.priceCents = priceCents(body[money], money);
  if (Object.keys(changes).length === 0) throw badRequest('No fields to update');
  return changes;
}

/** `productConnection` pages in id order: a position is the last id seen. */
export const PRODUCT_CURSOR = idCursor('product:');
