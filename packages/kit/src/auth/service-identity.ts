import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, errors as joseErrors, importJWK, jwtVerify, SignJWT, type JWK, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { ConfigError } from '../config/config';
import { forbidden, unauthenticated } from '../errors/errors';
import { serviceOfKid } from './service-keys';
import { GRPC_CALLS, grpcCallersOf, trustedCallersOf, type ServiceName } from '../config/topology';

export { generateServiceKey, serviceOfKid, type ServiceKeyPair } from './service-keys';

/**
 * Service identity (docs/service-identity.md): every gRPC call carries a short-lived token signed
 * by the calling service's own Ed25519 key — issuer = caller, audience = callee, `jti`, expiry in
 * seconds — and the callee holds only public keys. Key ids are `<service>:<id>`, so a key can
 * only ever speak for the service it was made for, and rotation is "trust both, sign with the
 * new one, drop the old one".
 */
export const SERVICE_TOKEN_METADATA = 'x-halo-service-token';
const ALG = 'EdDSA';
/** Lifetime of a minted token, and how long before expiry the client mints a fresh one. */
export const SERVICE_TOKEN_TTL_S = 120;
const REFRESH_BEFORE_S = 60;
const CLOCK_TOLERANCE_S = 5;

const okpJwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().min(1),
  kid: z.string().regex(/^[a-z][a-z0-9_-]*:[A-Za-z0-9._-]+$/, 'kid must be <service>:<id>'),
});
const privateJwk = okpJwk.extend({ d: z.string().min(1) });
const jwks = z.object({ keys: z.array(okpJwk.passthrough()) });

export interface ServiceIdentityConfig {
  /** This service's private JWK (JSON). Needed to call others. */
  SERVICE_SIGNING_KEY?: string | undefined;
  /** JWKS (JSON) of the services allowed to call this one. Needed to serve gRPC. */
  SERVICE_TRUSTED_KEYS?: string | undefined;
}

/** Parses the two settings once at start-up; a bad value is a ConfigError naming the variable. */
export function parseServiceKeys(cfg: ServiceIdentityConfig): { signingKey?: JWK & { kid: string }; trusted?: { keys: JWK[] } } {
  const parse = <T>(name: string, raw: string | undefined, schema: z.ZodType<T>): T | undefined => {
    if (!raw) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      throw new ConfigError(`Invalid configuration: ${name}: must be JSON (a JWK${name.endsWith('KEYS') ? ' set' : ''})`);
    }
    const result = schema.safeParse(json);
    if (!result.success) throw new ConfigError(`Invalid configuration: ${name}: ${result.error.issues[0]?.message ?? 'invalid'}`);
    return result.data;
  };
  const signingKey = parse('SERVICE_SIGNING_KEY', cfg.SERVICE_SIGNING_KEY, privateJwk) as (JWK & { kid: string }) | undefined;
  const trusted = parse('SERVICE_TRUSTED_KEYS', cfg.SERVICE_TRUSTED_KEYS, jwks) as { keys: JWK[] } | undefined;
  return { ...(signingKey ? { signingKey } : {}), ...(trusted ? { trusted } : {}) };
}

/** A verified service token: who sent it, its id (`jti`) and expiry (seconds since the epoch). */
export interface VerifiedToken {
  caller: string;
  jti: string;
  exp: number;
}

export class ServiceIdentity {
  private readonly minted = new Map<string, { token: string; refreshAt: number }>();
  private readonly verified = new Map<string, VerifiedToken>();
  private readonly keyset: JWTVerifyGetKey | undefined;
  private signing: ReturnType<typeof importJWK> | undefined;

  constructor(
    /** This service's name: the issuer of its tokens and the audience it accepts. */
    readonly name: string,
    private readonly keys: { signingKey?: (JWK & { kid: string }) | undefined; trusted?: { keys: JWK[] } | undefined },
  ) {
    if (keys.signingKey && serviceOfKid(keys.signingKey.kid) !== name) {
      throw new ConfigError(
        `Invalid configuration: SERVICE_SIGNING_KEY: its kid names "${serviceOfKid(keys.signingKey.kid)}", not ${name}`,
      );
    }
    this.keyset = keys.trusted ? createLocalJWKSet(keys.trusted) : undefined;
  }

  static fromConfig(name: string, cfg: ServiceIdentityConfig): ServiceIdentity {
    return new ServiceIdentity(name, parseServiceKeys(cfg));
  }

  get canCall(): boolean {
    return this.keys.signingKey !== undefined;
  }

  /** Whether any caller's public key is configured (a gRPC server with callers needs one). */
  get trustsAnyone(): boolean {
    return (this.keys.trusted?.keys.length ?? 0) > 0;
  }

  /** A token for calling `audience`, reused until a minute before it expires. */
  async tokenFor(audience: string): Promise<string> {
    const now = Date.now() / 1000;
    const cached = this.minted.get(audience);
    if (cached && cached.refreshAt > now) return cached.token;
    const iat = Math.floor(now);
    const token = await this.sign(audience, iat);
    this.minted.set(audience, { token, refreshAt: iat + SERVICE_TOKEN_TTL_S - REFRESH_BEFORE_S });
    return token;
  }

  /**
   * A token made for one request and never reused: what a callee that spends tokens (the
   * registry's publish and rollback, docs/registry.md) accepts once.
   */
  singleUseToken(audience: string): Promise<string> {
    return this.sign(audience, Math.floor(Date.now() / 1000));
  }

  private async sign(audience: string, iat: number): Promise<string> {
    const jwk = this.keys.signingKey;
    if (!jwk) throw new ConfigError(`${this.name} has no SERVICE_SIGNING_KEY, so it cannot call ${audience}`);
    this.signing ??= importJWK(jwk, ALG);
    return new SignJWT({})
      .setProtectedHeader({ alg: ALG, kid: jwk.kid, typ: 'halo-service+jwt' })
      .setIssuer(this.name)
      .setAudience(audience)
      .setIssuedAt(iat)
      .setExpirationTime(iat + SERVICE_TOKEN_TTL_S)
      .setJti(randomUUID())
      .sign(await this.signing);
  }

  /**
   * The calling service's name, or UNAUTHENTICATED: no token, a key this service does not trust
   * (unknown, forged, removed by rotation), another audience, or expired. A verified token is
   * remembered until it expires, so the signature is checked once per token, not once per call.
   */
  async verify(token: string | undefined): Promise<string> {
    return (await this.verifyToken(token)).caller;
  }

  /** As `verify`, with the token's id and expiry: what a callee that spends tokens remembers. */
  async verifyToken(token: string | undefined): Promise<VerifiedToken> {
    if (!token) throw unauthenticated('Service token required');
    const now = Date.now() / 1000;
    const hit = this.verified.get(token);
    if (hit) {
      if (hit.exp + CLOCK_TOLERANCE_S > now) return hit;
      this.verified.delete(token);
    }
    if (!this.keyset) throw unauthenticated('Invalid service token');
    let caller: string;
    let exp: number;
    let jti: string;
    try {
      const { payload, protectedHeader } = await jwtVerify(token, this.keyset, {
        algorithms: [ALG],
        audience: this.name,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['iss', 'aud', 'exp', 'iat', 'jti'],
      });
      caller = payload.iss!;
      exp = payload.exp!;
      jti = payload.jti!;
      // A key speaks only for the service it was made for.
      if (serviceOfKid(protectedHeader.kid) !== caller) throw new Error('issuer does not own the key');
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof Error) throw unauthenticated('Invalid service token');
      throw err;
    }
    if (this.verified.size >= 1_000) this.verified.clear();
    const verified = { caller, exp, jti };
    this.verified.set(token, verified);
    return verified;
  }
}

/** Which services may call which method of one gRPC service: `{ CreateUser: ['auth'] }`. */
export type GrpcAccess = Readonly<Record<string, readonly string[]>>;

/** PERMISSION_DENIED unless `caller` is listed for `method` (an unlisted method is closed). */
export function authorizeCaller(access: GrpcAccess, method: string, caller: string): void {
  if (!access[method]?.includes(caller)) throw forbidden(`${caller} may not call ${method}`);
}

/**
 * A process's identity from its settings, refusing to start without the keys its place in the
 * topology needs: a signing key if it calls anyone (`GRPC_CALLS`), trusted keys if anyone calls
 * it. A missing key would otherwise surface as every call failing at run time.
 */
export function serviceIdentityFor(name: ServiceName | 'gateway', cfg: ServiceIdentityConfig): ServiceIdentity {
  const identity = ServiceIdentity.fromConfig(name, cfg);
  const calls = GRPC_CALLS[name];
  if (calls.length > 0 && !identity.canCall) {
    throw new ConfigError(
      `Invalid configuration: SERVICE_SIGNING_KEY: is required: ${name} calls ${calls.join(', ')} over gRPC (\`npm run service-key -- ${name}\` makes one; npm start sets it for you)`,
    );
  }
  const grpcCallers = name === 'gateway' ? [] : grpcCallersOf(name);
  const callers = name === 'gateway' ? [] : trustedCallersOf(name);
  if (callers.length > 0 && !identity.trustsAnyone) {
    const how =
      grpcCallers.length > 0
        ? `${grpcCallers.join(', ')} call${grpcCallers.length > 1 ? '' : 's'} ${name} over gRPC`
        : `${callers.join(', ')} call ${name} with service tokens`;
    throw new ConfigError(
      `Invalid configuration: SERVICE_TRUSTED_KEYS: is required: ${how} (a JWKS of their public keys; npm start sets it for you)`,
    );
  }
  return identity;
}
