export { createHaloClient, HaloClient, type HaloClientOptions } from './client.js';
export { MemoryCookieJar, type CookieJar } from './cookie-jar.js';
export { persistedQueryManifest, type ManifestOperation, type PersistedQueryManifest } from './manifest.js';
export {
  GraphQLRequestError,
  HaloApiError,
  HaloNetworkError,
  SignedOutError,
  SubscriptionClosedError,
  type GraphQLErrorEntry,
} from './errors.js';
export {
  mayBeMutation,
  type GraphQLCallOptions,
  type GraphQLClient,
  type GraphQLOperation,
  type GraphQLResponse,
  type GraphQLResult,
  type GraphQLSettings,
  type SubscribeOptions,
} from './graphql.js';
export { defaultIsAfter, REPLAY_TOO_LONG, type ResumeOptions } from './resume.js';
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
} from './rest.js';
export {
  decideRetry,
  DEFAULT_RETRY,
  isRetryable,
  parseRetryAfter,
  type AttemptOutcome,
  type RetryDecision,
  type RetryOptions,
  type Sleep,
} from './retry.js';
export {
  CLOSE_UNAUTHORIZED,
  type ReconnectOptions,
  type SubscriptionSink,
  type SubscriptionTransportFactory,
  type TransportContext,
} from './subscriptions.js';
export type { AuthMode, DeprecationNotice, FetchCredentials, HaloResponse, QueryValue, RequestSpec } from './transport.js';
export * from './types.js';
export { uuidV4 } from './web-crypto.js';
