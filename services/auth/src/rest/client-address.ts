import type { Express } from 'express';

type TrustFn = (address: string, hop: number) => boolean;

/**
 * `req.ip` for the per-address limits: auth believes exactly one hop, the gateway's, which puts
 * the client address it judged last in `X-Forwarded-For` (gateway/src/http/forwarded.ts). `TRUST_PROXY`
 * says which peers are the gateway; entries further left are never believed, whoever wrote them.
 */
export function trustGatewayHop(app: Express, trustProxy: boolean | number | string): void {
  app.set('trust proxy', trustProxy);
  // Express compiles the setting (addresses, subnets, presets) into this function.
  const isGateway = app.get('trust proxy fn') as TrustFn;
  const oneHop: TrustFn = (address, hop) => hop === 0 && isGateway(address, hop);
  app.set('trust proxy', oneHop);
}
