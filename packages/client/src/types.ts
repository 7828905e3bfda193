/**
 * The public contract's shapes (docs/api/*.md; the same as the services' route manifests, from
 * which the gateway's /openapi.json is composed). REST ids are integers, timestamps ISO-8601 UTC
 * strings.
 */

// ── Accounts and tokens (docs/api/auth.md) ──

export interface LoginInput {
  email: string;
  password: string;
}

/** `POST /auth/login` (and the OAuth callback): `token` and `accessToken` are the same JWT. */
export interface LoginResponse {
  token: string;
  accessToken: string;
  user: { id: number; name: string };
}

/** `POST /auth/refresh`. */
export interface RefreshResponse {
  token: string;
  accessToken: string;
}

export interface RegisterInput {
  name: string;
  email: string;
  password: string;
}

export interface RegisterResponse {
  user: { id: number; name: string; email: string };
}

export type Role = 'user' | 'admin';

/** `GET /profile`. Never a password or hash. */
export interface Profile {
  id: number;
  name: string;
  email: string;
  avatar: string | null;
  role: Role;
  created_at: string;
}

import type { ApiKeyScope } from './scopes.js';
export { API_KEY_SCOPES, OPERATION_SCOPES, type ApiKeyScope, type ClientOperationsScope } from './scopes.js';

/** An API key as listed (`GET /auth/api-keys`): never the key itself. */
export interface ApiKey {
  id: number;
  name: string;
  prefix: string;
  scopes: ApiKeyScope[];
  created_at: string;
  last_used_at: string | null;
  revoked: boolean;
  revoked_at: string | null;
}

/** `POST /auth/api-keys` → 201: `key` is shown this once. */
export interface CreatedApiKey {
  id: number;
  name: string;
  prefix: string;
  scopes: ApiKeyScope[];
  created_at: string;
  key: string;
}

export interface CreateApiKeyInput {
  name: string;
  scopes: ApiKeyScope[];
}

// ── Content (docs/api/resources.md "Content") ──

export interface Post {
  id: number;
  user_id: number;
  title: string;
  body: string;
  created_at: string;
}

export interface Comment {
  id: number;
  post_id: number;
  user_id: number;
  body: string;
  created_at: string;
  author_name: string | null;
}

export interface Author {
  id: number;
  name: string;
  avatar: string | null;
}

/** `GET /posts/:id`: the post with its author and its comments. */
export interface PostWithRelations extends Post {
  author: Author | null;
  comments: Comment[];
}

// ── Products (docs/api/resources.md "Products"; v2: docs/migrations/v1-to-v2.md) ──

interface ProductBase {
  id: number;
  name: string;
  description: string;
  category: string;
  created_at: string;
  updated_at: string;
}

/** v1 (the unversioned, deprecated paths): money as a decimal `price`. */
export interface ProductV1 extends ProductBase {
  price: number;
}

/** v2 (`/api/v2/products`): money as integer `price_cents`. */
export interface ProductV2 extends ProductBase {
  price_cents: number;
}

export type ProductSort = 'id' | 'name' | 'price' | 'created_at';
export type SortOrder = 'asc' | 'desc';

export interface ProductListQuery {
  /** 1-based; default 1. */
  page?: number;
  /** Default 10, capped at 100. */
  limit?: number;
  /** Exact match. */
  category?: string;
  sort?: ProductSort;
  order?: SortOrder;
}

export interface PageMeta {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
  hasNext: boolean;
  hasPrev: boolean;
}

export interface Page<T> {
  data: T[];
  meta: PageMeta;
}

export interface NewProductV1 {
  name: string;
  category: string;
  price: number;
  description?: string | null;
}

export interface NewProductV2 {
  name: string;
  category: string;
  price_cents: number;
  description?: string | null;
}

/** `PUT` is a partial update: at least one member. */
export type ProductChangesV1 = Partial<NewProductV1>;
export type ProductChangesV2 = Partial<NewProductV2>;

// ── Payments and orders (docs/api/resources.md) ──

export interface PaymentInput {
  /** Positive, at most 2 decimals. */
  amount: number;
}

export interface Payment {
  id: number;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded';
  created_at: string;
}

export interface Order {
  id: number;
  user_id: number;
  product_id: number;
  client_order_id: string;
  created_at: string;
}

export interface OrderInput {
  product_id: number;
  /**
   * 1–100 characters, unique per user: the order's name, which makes creating it idempotent.
   * Omitted: the SDK generates a UUID once for this call and reuses it on every retry.
   */
  client_order_id?: string;
}

// ── GraphQL ──

/** A GraphQL document whose result and variables types are known to TypeScript. */
export type TypedDocument<TData, TVariables> = string & { readonly __result?: TData; readonly __variables?: TVariables };

/** Marks a query string with its result and variables types. */
export const typed = <TData = unknown, TVariables extends Record<string, unknown> = Record<string, unknown>>(
  document: string,
): TypedDocument<TData, TVariables> => document;
