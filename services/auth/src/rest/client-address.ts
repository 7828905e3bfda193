import type { Express, Request, RequestHandler } from 'express';
import { SERVICE_TOKEN_METADATA, type ServiceIdentity } from '@halo/kit/auth';
import { canonicalAddress } from '@halo/kit/domain';

/** What a request says about the way it came; believed from the gateway only. */
const FORWARDED = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'forwarded'] as const;

/**
 * Who may say where a request came from: the gateway, proven by identity rather than by address.
 * Its REST proxy sends every request it forwards to auth with its service token
 * (`x-halo-service-token`: signed with the gateway's key, audience auth, short-lived;
 * docs/service-identity.md). Without a token that verifies as the gateway's, the forwarded
 * headers are removed before anything reads them, so any other peer — a pod on the cluster
 * network, a process on loopback — counts by its socket address whatever it sends. With it,
 * express believes exactly one hop: the gateway's last `X-Forwarded-For` entry (the client address
 * it judged, gateway/src/http/forwarded.ts), and its proto and host (auth's own origin).
 */
export function believeGatewayOnly(app: Express, identity: ServiceIdentity): void {
  // One hop from whoever is left holding forwarded headers: only the gateway is.
  app.set('trust proxy', (_address: string, hop: number) => hop === 0);
  app.use(forgetUnlessGateway(identity));
}

function forgetUnlessGateway(identity: ServiceIdentity): RequestHandler {
  return (req, _res, next) => {
    const forget = () => {
      for (const name of FORWARDED) delete req.headers[name];
      next();
    };
    const token = req.headers[SERVICE_TOKEN_METADATA];
    if (typeof token !== 'string' || !FORWARDED.some((name) => req.headers[name] !== undefined)) return forget();
    identity.verify(token).then((caller) => (caller === 'gateway' ? next() : forget()), forget);
  };
}

/**
 * The client address the per-address limits count: canonical (`canonicalAddress`: IPv4-mapped
 * IPv6 is IPv4, one text per address). A forwarded address that is not written the standard way
 * (`010.066.000.001`) is not believed: the peer's own address counts instead.
 */
export const clientAddress = (req: Request): string =>
  canonicalAddress(req.ip ?? '') ?? canonicalAddress(req.socket.remoteAddress ?? '') ?? 'unknown';
