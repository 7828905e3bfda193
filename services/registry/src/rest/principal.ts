import type { IncomingMessage } from 'node:http';
import { callerFromHeader, requireAdmin, type ServiceIdentity } from '@halo/kit/auth';
import { SERVICE_TOKEN_HEADER } from '@halo/kit/contract';
import { forbidden, isHaloError, unauthenticated, unavailable } from '@halo/kit/errors';
import { IdentityRefused } from '@halo/kit/grpc';
import type { Principal } from '../domain/model';

/** What a registry auth refuses to talk to must fix (one line, the same in the answer and the CLI). */
export const TRUST_MISCONFIGURED =
  "auth refuses the registry's service token: put the registry's public key in auth's SERVICE_TRUSTED_KEYS";

/** The scope an admin's API key needs to check, publish and roll back any service (auth's known scopes). */
export const SCHEMA_WRITE_SCOPE = 'schema:write';
/** The scope that lets an admin's API key read the registry (every GET) and its Studio, and write nothing. */
export const SCHEMA_READ_SCOPE = 'schema:read';

/** The scope that lets an admin's API key push and retire every client app's operation list (and read). */
export const OPERATIONS_WRITE_SCOPE = 'operations:write';

/** What a key may write of one kind: all (null) with `scope`, those named by `<scope>:<name>`, none (`[]`). */
function namesOf(scopes: readonly string[] | null, scope: string): readonly string[] | null {
  if (scopes === null || scopes.includes(scope)) return null;
  return scopes.filter((s) => s.startsWith(`${scope}:`)).map((s) => s.slice(scope.length + 1));
}

/**
 * What a key may write: the services (all, null, with `schema:write` or an admin's own token,
 * which is not scope-limited; those named by `schema:write:<service>`; none, `[]`, with only
 * `schema:read`) and the clients whose operation lists (`operations:write`, or
 * `operations:write:<client>`). Any of these scopes implies reading. A key with none of them → 403
 * `Forbidden`, whatever it asks.
 */
function writableOf(scopes: readonly string[] | null): { services: readonly string[] | null; clients: readonly string[] | null } {
  const services = namesOf(scopes, SCHEMA_WRITE_SCOPE);
  const clients = namesOf(scopes, OPERATIONS_WRITE_SCOPE);
  const reads = scopes === null || scopes.includes(SCHEMA_READ_SCOPE);
  if (!reads && services?.length === 0 && clients?.length === 0) throw forbidden();
  return { services, clients };
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
const header = (req: IncomingMessage, name: string) => {
  const v = req.headers[name];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
};

/** The issuer of the token `npm run subgraph` signs with the key npm start made for it (development only). */
export const DEVELOPER = 'developer';

/**
 * Who is calling (docs/registry.md, "Authentication"): a service token (`aud: registry`), an
 * admin's API key with `schema:write` (or `schema:write:<service>`, or `schema:read` to read only,
 * or `operations:write[:<client>]` for client operation lists) exchanged through auth, and in development only npm start's
 * developer token, or anyone on loopback without credentials (who may read and check, never
 * write). No credentials: 401 `Token required`; bad ones: 401 `Invalid token`; an API key of a
 * non-admin or without the scope: 403 `Forbidden`.
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
      let verified;
      try {
        verified = await opts.identity.verifyToken(token);
      } catch {
        throw unauthenticated('Invalid token');
      }
      const spendable = { jti: verified.jti, exp: verified.exp };
      if (verified.caller !== DEVELOPER) return { kind: 'service', name: verified.caller, token: spendable };
      // A developer key outside development is a misplaced dev default: not accepted.
      if (!opts.development) throw unauthenticated('Invalid token');
      return { kind: 'developer', token: spendable };
    }
    const apiKey = header(req, 'x-api-key');
    if (apiKey) {
      let accessToken: string;
      try {
        accessToken = await opts.exchangeApiKey(apiKey);
      } catch (err) {
        // auth's own answer to an unknown or revoked key; anything else (auth down) stays a 5xx.
        if (isHaloError(err) && err.kind === 'UNAUTHENTICATED') throw unauthenticated('Invalid token');
        // auth refuses the registry itself: the deployment is misconfigured, and it says how.
        if (err instanceof IdentityRefused) throw unavailable(`Service unavailable: ${TRUST_MISCONFIGURED} (${err.detail})`);
        throw err;
      }
      const caller = requireAdmin(callerFromHeader(`Bearer ${accessToken}`, opts.jwtSecret));
      return { kind: 'admin', id: String(caller.id), name: caller.name, ...writableOf(caller.scopes) };
    }
    if (opts.development && LOOPBACK.test(req.socket.remoteAddress ?? '')) return { kind: 'anonymous' };
    throw unauthenticated('Token required');
  };
}
