import { SignedOutError } from './errors.js';
import type { Session } from './session.js';
import type { HaloResponse, Transport } from './transport.js';
import type {
  ApiKey,
  Comment,
  CreateApiKeyInput,
  CreatedApiKey,
  LoginInput,
  LoginResponse,
  NewProductV1,
  NewProductV2,
  Order,
  OrderInput,
  Page,
  Payment,
  PaymentInput,
  Post,
  PostWithRelations,
  ProductChangesV1,
  ProductChangesV2,
  ProductListQuery,
  ProductV1,
  ProductV2,
  Profile,
  RefreshResponse,
  RegisterInput,
  RegisterResponse,
} from './types.js';
import { uuidV4 } from './web-crypto.js';

/** Per-call options of every helper. */
export interface CallOptions {
  /** Aborts the call, including a wait between retries. */
  signal?: AbortSignal;
  /** Extra request headers (e.g. your own `X-Request-Id`). */
  headers?: Record<string, string>;
}

/**
 * Every public REST route and the helper that calls it. test/routes.test.ts compares this table
 * with the gateway's composed route table (gateway/routes.json), so a route added there without a
 * helper here fails the build.
 */
export const REST_ROUTES = [
  ['POST', '/auth/register', 'auth.register'],
  ['POST', '/auth/login', 'auth.login'],
  ['POST', '/auth/refresh', 'auth.refresh'],
  ['POST', '/auth/logout', 'auth.logout'],
  ['GET', '/profile', 'auth.profile'],
  ['GET', '/auth/api-keys', 'auth.apiKeys.list'],
  ['POST', '/auth/api-keys', 'auth.apiKeys.create'],
  ['DELETE', '/auth/api-keys/:id', 'auth.apiKeys.revoke'],
  ['GET', '/auth/oauth/:provider/start', 'auth.oauthStartUrl'],
  ['GET', '/auth/oauth/:provider/callback', 'auth.oauthStartUrl (the provider redirects the browser there)'],
  ['GET', '/hello', 'content.hello'],
  ['POST', '/greet', 'content.greet'],
  ['GET', '/users/:userId/posts', 'content.postsOfUser'],
  ['GET', '/posts/:id', 'content.post'],
  ['GET', '/posts/:id/comments', 'content.comments'],
  ['GET', '/products', 'products.list / productsV2.list'],
  ['POST', '/products', 'products.create / productsV2.create'],
  ['GET', '/products/:id', 'products.get / productsV2.get'],
  ['PUT', '/products/:id', 'products.update / productsV2.update'],
  ['DELETE', '/products/:id', 'products.delete / productsV2.delete'],
  ['POST', '/api/payments', 'payments.create'],
  ['GET', '/api/payments/:id', 'payments.get'],
  ['POST', '/api/orders', 'orders.create'],
  ['GET', '/api/orders', 'orders.list'],
  ['GET', '/api/orders/:id', 'orders.get'],
] as const;

const id = (value: number | string) => encodeURIComponent(String(value));

/** Accounts, tokens and API keys (docs/api/auth.md). */
export class AuthApi {
  readonly apiKeys: {
    /** `GET /auth/api-keys`: the caller's keys (admins). */
    list(opts?: CallOptions): Promise<ApiKey[]>;
    /** `POST /auth/api-keys`: the key is in `key`, shown this once. */
    create(input: CreateApiKeyInput, opts?: CallOptions): Promise<CreatedApiKey>;
    /** `DELETE /auth/api-keys/:id`. */
    revoke(keyId: number, opts?: CallOptions): Promise<void>;
  };

  constructor(
    private readonly t: Transport,
    private readonly session: Session,
  ) {
    this.apiKeys = {
      list: async (opts) => (await t.request<{ data: ApiKey[] }>({ method: 'GET', path: '/auth/api-keys', ...opts })).body.data,
      create: async (input, opts) =>
        (await t.request<{ data: CreatedApiKey }>({ method: 'POST', path: '/auth/api-keys', body: input, ...opts })).body.data,
      revoke: async (keyId, opts) => {
        await t.request({ method: 'DELETE', path: `/auth/api-keys/${id(keyId)}`, ...opts });
      },
    };
  }

  /** `POST /auth/register` → the new user (not signed in: log in next). */
  async register(input: RegisterInput, opts?: CallOptions): Promise<RegisterResponse> {
    return (await this.t.request<RegisterResponse>({ method: 'POST', path: '/auth/register', body: input, auth: 'none', ...opts })).body;
  }

  /**
   * `POST /auth/login`: keeps the access token for every later call; the refresh cookie stays in
   * the browser, or in the SDK's cookie jar elsewhere. Never retried (a POST without a key); a 429
   * `Too many attempts` carries `retryAfterMs`.
   */
  async login(input: LoginInput, opts?: CallOptions): Promise<LoginResponse> {
    const { body } = await this.t.request<LoginResponse>({ method: 'POST', path: '/auth/login', body: input, auth: 'none', ...opts });
    this.session.set(body.accessToken ?? body.token);
    return body;
  }

  /**
   * `POST /auth/refresh`: a new access token for the refresh cookie (which auth rotates). Shared
   * with the automatic renewal after a 401: concurrent calls make one request. Rejects with
   * SignedOutError when the session is over. A browser app calls this at start to resume a
   * session from its cookie.
   */
  refresh(opts?: Pick<CallOptions, 'signal'>): Promise<string> {
    return this.session.refresh(opts?.signal);
  }

  /** `POST /auth/logout`: ends the session on the server (its refresh token family) and forgets the token here. */
  async logout(opts?: CallOptions): Promise<void> {
    try {
      await this.t.request({ method: 'POST', path: '/auth/logout', auth: 'none', ...opts });
    } finally {
      this.session.set(null);
    }
  }

  /** `GET /profile`. */
  async profile(opts?: CallOptions): Promise<Profile> {
    return (await this.t.request<Profile>({ method: 'GET', path: '/profile', ...opts })).body;
  }

  /** Where to send a browser to sign in with an OAuth 2.0 / OIDC provider (`dev` in the embedded mode). */
  oauthStartUrl(provider: string): string {
    return this.t.url({ path: `/auth/oauth/${encodeURIComponent(provider)}/start` });
  }
}

/**
 * The refresher behind Session: `POST /auth/refresh` with the cookie. A refusal by auth (401
 * `Invalid refresh token`, 403 for a cross-site request) ends the session; any other failure (no
 * answer, 5xx) is reported as it is and leaves the session alone, since the cookie may still be good.
 * Never retried: a refresh whose answer was lost has already rotated the cookie, and resending
 * the old one would make auth revoke the session as a stolen token.
 */
export async function refreshAccessToken(t: Transport): Promise<string> {
  const res = await t.exchange<RefreshResponse>({ method: 'POST', path: '/auth/refresh', auth: 'none' });
  if (res.status === 200) return res.body.accessToken ?? res.body.token;
  const err = t.apiError({ method: 'POST', path: '/auth/refresh' }, res);
  if (res.status === 401 || res.status === 403) throw new SignedOutError(undefined, err);
  throw err;
}

/** The demonstration routes and users' posts (docs/api/resources.md "Content"). */
export class ContentApi {
  constructor(private readonly t: Transport) {}

  /** `GET /hello` → `{"message":"Halo Dunia!"}`. */
  async hello(opts?: CallOptions): Promise<{ message: string }> {
    return (await this.t.request<{ message: string }>({ method: 'GET', path: '/hello', auth: 'none', ...opts })).body;
  }

  /** `POST /greet` → `{"message":"Halo, <name>!"}`. */
  async greet(name: string, opts?: CallOptions): Promise<{ message: string }> {
    return (await this.t.request<{ message: string }>({ method: 'POST', path: '/greet', body: { name }, auth: 'none', ...opts })).body;
  }

  /** `GET /users/:userId/posts`: newest first. */
  async postsOfUser(userId: number, opts?: CallOptions): Promise<Post[]> {
    return (await this.t.request<{ data: Post[] }>({ method: 'GET', path: `/users/${id(userId)}/posts`, auth: 'none', ...opts })).body.data;
  }

  /** `GET /posts/:id`: with its author and comments. */
  async post(postId: number, opts?: CallOptions): Promise<PostWithRelations> {
    return (await this.t.request<{ data: PostWithRelations }>({ method: 'GET', path: `/posts/${id(postId)}`, auth: 'none', ...opts })).body
      .data;
  }

  /** `GET /posts/:id/comments`: oldest first. */
  async comments(postId: number, opts?: CallOptions): Promise<Comment[]> {
    return (await this.t.request<{ data: Comment[] }>({ method: 'GET', path: `/posts/${id(postId)}/comments`, auth: 'none', ...opts })).body
      .data;
  }
}

/**
 * Products (docs/api/resources.md "Products"): one class for both versions, which differ only in
 * the money field (`price` in v1, `price_cents` in v2) and the path prefix. Reads are public;
 * writes need an admin token or an API key with `catalog:write`.
 */
export class ProductsApi<P, New, Changes> {
  constructor(
    private readonly t: Transport,
    /** `` (v1, the unversioned paths) or `/api/v2`. */
    private readonly prefix: string,
  ) {}

  /** `GET /products?page&limit&category&sort&order` → `{data, meta}`. */
  async list(query: ProductListQuery = {}, opts?: CallOptions): Promise<Page<P>> {
    const q = { page: query.page, limit: query.limit, category: query.category, sort: query.sort, order: query.order };
    return (await this.t.request<Page<P>>({ method: 'GET', path: `${this.prefix}/products`, query: q, auth: 'none', ...opts })).body;
  }

  /** `GET /products/:id`. */
  async get(productId: number, opts?: CallOptions): Promise<P> {
    return (await this.t.request<{ data: P }>({ method: 'GET', path: `${this.prefix}/products/${id(productId)}`, auth: 'none', ...opts }))
      .body.data;
  }

  /** `POST /products` → 201. Not retried (a POST without a key). */
  async create(input: New, opts?: CallOptions): Promise<P> {
    return (await this.t.request<{ data: P }>({ method: 'POST', path: `${this.prefix}/products`, body: input, ...opts })).body.data;
  }

  /** `PUT /products/:id`: a partial update. */
  async update(productId: number, changes: Changes, opts?: CallOptions): Promise<P> {
    return (await this.t.request<{ data: P }>({ method: 'PUT', path: `${this.prefix}/products/${id(productId)}`, body: changes, ...opts }))
      .body.data;
  }

  /**
   * `DELETE /products/:id` → 204. Retried like every DELETE: if an attempt's answer was lost after
   * the product was deleted, the retry answers 404.
   */
  async delete(productId: number, opts?: CallOptions): Promise<void> {
    await this.t.request({ method: 'DELETE', path: `${this.prefix}/products/${id(productId)}`, ...opts });
  }
}

export type ProductsV1Api = ProductsApi<ProductV1, NewProductV1, ProductChangesV1>;
export type ProductsV2Api = ProductsApi<ProductV2, NewProductV2, ProductChangesV2>;

export interface PaymentOptions extends CallOptions {
  /**
   * The payment's key: generated (UUID v4) when absent. Pass the key of an earlier attempt to
   * resume that same payment (e.g. `err.idempotencyKey` of a HaloNetworkError) — never a new key
   * for a payment that may have gone through.
   */
  idempotencyKey?: string;
}

export interface PaymentResult {
  payment: Payment;
  /** The answer was the replay of an earlier request with this key (`Idempotent-Replayed: true`). */
  replayed: boolean;
  idempotencyKey: string;
  /** `X-Request-Id` of the answer. */
  requestId: string | null;
}

/** Payments (docs/api/resources.md "Payments"). */
export class PaymentsApi {
  constructor(private readonly t: Transport) {}

  /**
   * `POST /api/payments` with an `Idempotency-Key`: one key per logical payment, the same on every
   * retry, so it is charged at most once (5xx and lost answers are retried; a 409 `Request in
   * progress` is waited out).
   */
  async create(input: PaymentInput, opts: PaymentOptions = {}): Promise<PaymentResult> {
    const { idempotencyKey = uuidV4(), headers, ...rest } = opts;
    const res = await this.t.request<{ data: Payment }>({
      method: 'POST',
      path: '/api/payments',
      body: { amount: input.amount },
      headers: { ...headers, 'Idempotency-Key': idempotencyKey },
      ...rest,
    });
    return {
      payment: res.body.data,
      replayed: res.headers.get('idempotent-replayed') === 'true',
      idempotencyKey,
      requestId: res.requestId,
    };
  }

  /** `GET /api/payments/:id`: the caller's own only (else 404). */
  async get(paymentId: number, opts?: CallOptions): Promise<Payment> {
    return (await this.t.request<{ data: Payment }>({ method: 'GET', path: `/api/payments/${id(paymentId)}`, ...opts })).body.data;
  }
}

export interface OrderResult {
  order: Order;
  /** 201: this call created it; false: 200, an order with this client_order_id already existed. */
  created: boolean;
}

/** Orders, idempotent by their client_order_id (docs/api/resources.md "Orders"). */
export class OrdersApi {
  constructor(private readonly t: Transport) {}

  /**
   * `POST /api/orders`. Retried like an idempotent call although it is a POST: the contract makes
   * (user, client_order_id) name one order, so a resend answers that order instead of a second one.
   */
  async create(input: OrderInput, opts?: CallOptions): Promise<OrderResult> {
    const body = { product_id: input.product_id, client_order_id: input.client_order_id ?? uuidV4() };
    const res: HaloResponse<{ data: Order }> = await this.t.request({
      method: 'POST',
      path: '/api/orders',
      body,
      idempotent: true,
      ...opts,
    });
    return { order: res.body.data, created: res.status === 201 };
  }

  /** `GET /api/orders`: the caller's orders, newest first. */
  async list(opts?: CallOptions): Promise<Order[]> {
    return (await this.t.request<{ data: Order[] }>({ method: 'GET', path: '/api/orders', ...opts })).body.data;
  }

  /** `GET /api/orders/:id`: the caller's own only (else 404). */
  async get(orderId: number, opts?: CallOptions): Promise<Order> {
    return (await this.t.request<{ data: Order }>({ method: 'GET', path: `/api/orders/${id(orderId)}`, ...opts })).body.data;
  }
}
