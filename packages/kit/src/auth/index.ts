/** Who is calling: access tokens (JWT), callers, API-key scopes, service keys and service-to-service identity. */
export {
  type AccessClaims,
  assertSigningSecret,
  bearerToken,
  type Caller,
  callerFromClaims,
  callerFromHeader,
  CLOCK_TOLERANCE_S,
  INVALID_TOKEN,
  MIN_SECRET_BYTES,
  requireAdmin,
  requireCaller,
  requireScope,
  signAccessToken,
  TOKEN_REQUIRED,
  tokenExpiresAt,
  verifyAccessToken,
} from './jwt';
export {
  CLIENT_OPERATIONS_SCOPE,
  type ClientOperationsScope,
  declaredFieldAccess,
  enforceDeclaredScopes,
  type FieldAccess,
  holdsScope,
  isScope,
  requireDeclaredScope,
  type Scope,
  SCOPES,
} from './scopes';
export {
  authorizeCaller,
  type GrpcAccess,
  parseServiceKeys,
  SERVICE_TOKEN_METADATA,
  SERVICE_TOKEN_TTL_S,
  ServiceIdentity,
  type ServiceIdentityConfig,
  serviceIdentityFor,
  type VerifiedToken,
} from './service-identity';
export { generateServiceKey, type ServiceKeyPair, serviceOfKid } from './service-keys';
