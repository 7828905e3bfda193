/**
 * A product as the domain sees it. Money is integer cents (exact); each transport renders it:
 * REST v1 and GraphQL as `price` (a number with at most 2 decimals), REST v2 and gRPC as cents.
 */
export interface Product {
  id: number;
  name: string;
  description: string;
  category: string;
  priceCents: number;
  /** ISO-8601 UTC. */
  createdAt: string;
  updatedAt: string;
}

export const SORT_KEYS = ['id', 'name', 'price', 'created_at'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
export const ORDERS = ['asc', 'desc'] as const;
export type Order = (typeof ORDERS)[number];

/** A validated `GET /products` query. */
export interface ListQuery {
  page: number;
  limit: number;
  category: string | null;
  sort: SortKey;
  order: Order;
}

/** Spec "Pagination metadata". */
export interface PageMeta {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
  hasNext: boolean;
  hasPrev: boolean;
}

export interface ProductPage {
  data: Product[];
  meta: PageMeta;
}

/** Validated fields of a create (all present) or an update (any subset). */
export interface ProductFields {
  name: string;
  description: string;
  category: string;
  priceCents: number;
}

/** Price as decimal `price` (REST v1, GraphQL) or integer `price_cents` (REST v2). */
export type MoneyField = 'price' | 'price_cents';
