/** gRPC servers and clients with service identity, call policies (timeouts, retries, breaker), health. */
export { CallPolicy, callPolicyFor, type CallPolicySettings, DEFAULT_CALL_POLICY } from './call-policy';
export {
  type CallOptions,
  callUnary,
  checkHealth,
  clientChannelOptions,
  grpc,
  type GrpcCallContext,
  type GrpcServiceBinding,
  HealthClient,
  IdentityRefused,
  REFUSED_BY_IDENTITY,
  REQUEST_ID_KEY,
  type RunningGrpcServer,
  type ServiceAuth,
  startGrpcServer,
  unary,
  waitForServing,
} from './grpc';
export { type GrpcClientClass, type PeerCallOptions, type PeerChannel, peerChannel } from './peer-channel';
export { type ApiKeyExchange, type ApiKeyExchangeOptions, type ApiKeyServiceClient, createApiKeyExchange } from './api-key-exchange';
