export { createHaloClient, HaloClient, type HaloClientOptions } from './client';
export { MemoryCookieJar, type CookieJar } from './cookie-jar';
export {
  GraphQLRequestError,
  HaloApiError,
  HaloNetworkError,
  SignedOutError,
  SubscriptionClosedError,
  type GraphQLErrorEntry,
} from './errors';
export {
  mayBeMutation,
  type GraphQLCallOptions,
  type GraphQLClient,
  type GraphQLOperation,
  type GraphQLResponse,
  type GraphQLResult,
  type GraphQLSettings,
} from './graphql';
export {
  REST_ROUTES,
  type AuthApi,
  type CallOptions,
  type ContentApi,
  type OrderResult,
  type OrdersApi,
  type PaymentOptions,
  type PaymentResult,
  type PaymentsApi,
  type ProductsApi,
  type ProductsV1Api,
  type ProductsV2Api,
} from './rest';
export {
  decideRetry,
  DEFAULT_RETRY,
  isRetryable,
  parseRetryAfter,
  type AttemptOutcome,
  type RetryDecision,
  type RetryOptions,
  type Sleep,
} from './retry';
export { CLOSE_UNAUTHORIZED, type ReconnectOptions, type SubscriptionSink } from './subscriptions';
export type { AuthMode, DeprecationNotice, FetchCredentials, HaloResponse, QueryValue, RequestSpec } from './transport';
export * from './types';
export { uuidV4 } from './web-crypto';
