import type { IncomingMessage } from 'node:http';
import { callerFromHeader, isHaloError, requireAdmin, SERVICE_TOKEN_HEADER, unauthenticated, type ServiceIdentity } from '@halo/kit';
import type { Principal } from '../domain/model';

/** The scope an admin's API key needs to check, publish and roll back (auth's known scopes). */
export const SCHEMA_WRITE_SCOPE = 'schema:write';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
const header = (req: IncomingMessage, name: string) => {
  const v = req.headers[name];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
};

/**
 * Who is calling (docs/registry.md, "Authentication"): a service token (`aud: registry`), an
 * admin's API key with `schema:write` exchanged through auth, or — in development only — anyone
 * on loopback without credentials. No credentials: 401 `Token required`; bad ones: 401
 * `Invalid token`; an API key of a non-admin or without the scope: 403 `Forbidden`.
 */
export function principalResolver(opts: {
  identity: ServiceIdentity;
  jwtSecret: string | undefined;
  exchangeApiKey: (apiKey: string) => Promise<string>;
  development: boolean;
}): (req: IncomingMessage) => Promise<Principal> {
  return async (req) => {
    const token = header(req, SERVICE_TOKEN_HEADER);
    if (token) {
      try {
        return { kind: 'service', name: await opts.identity.verify(token) };
      } catch {
        throw unauthenticated('Invalid token');
      }
    }
    const apiKey = header(req, 'x-api-key');
    if (apiKey) {
      let accessToken: string;
      try {
        accessToken = await opts.exchangeApiKey(apiKey);
      } catch (err) {
        // auth's own answer to an unknown or revoked key; anything else (auth down) stays a 5xx.
        if (isHaloError(err) && err.kind === 'UNAUTHENTICATED') throw unauthenticated('Invalid token');
        throw err;
      }
      const caller = requireAdmin(callerFromHeader(`Bearer ${accessToken}`, opts.jwtSecret), SCHEMA_WRITE_SCOPE);
      return { kind: 'admin', id: String(caller.id), name: caller.name };
    }
    if (opts.development && LOOPBACK.test(req.socket.remoteAddress ?? '')) return { kind: 'developer' };
    throw unauthenticated('Token required');
  };
}
