import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { JWK } from 'jose';

/**
 * Key material for service identity (docs/service-identity.md), with nothing but node:crypto so
 * the launcher can make the embedded mode's dev keys without loading the rest of the kit.
 */
export interface ServiceKeyPair {
  /** Private JWK with `kid`: the service's SERVICE_SIGNING_KEY. */
  privateJwk: JWK & { kid: string };
  /** Public JWK with `kid`: goes into the callees' SERVICE_TRUSTED_KEYS. */
  publicJwk: JWK & { kid: string };
}

/** A fresh Ed25519 key pair for `service` (the launcher's dev keys; `npm run service-key` in production). */
export function generateServiceKey(
  service: string,
  id: string = new Date().toISOString().slice(0, 10) + '-' + randomUUID().slice(0, 8),
): ServiceKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const kid = `${service}:${id}`;
  const priv = privateKey.export({ format: 'jwk' });
  const pub = publicKey.export({ format: 'jwk' });
  return { privateJwk: { ...priv, kid, alg: 'EdDSA' }, publicJwk: { ...pub, kid, alg: 'EdDSA' } };
}

/** The service named by a key id (`content:2026-11-22-ab12cd34` → `content`). */
export const serviceOfKid = (kid: string | undefined) => (kid?.includes(':') ? kid.slice(0, kid.indexOf(':')) : '');
